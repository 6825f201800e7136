"""The hybrid preset: a budget split with marginals, and a candidate pool weighted to fit them."""
