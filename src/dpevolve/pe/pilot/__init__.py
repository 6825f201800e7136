"""The public pilot: a vote chosen on public data alone (no private budget)."""
