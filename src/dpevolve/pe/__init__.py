"""Private Evolution: the loop, record distances, votes and their one arithmetic, variation."""
