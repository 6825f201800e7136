"""Blowfish policies: secret graphs, reach, sensitivity bounds, invalid-row calibration."""
