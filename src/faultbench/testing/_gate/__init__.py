"""The pass-rate gate: statistics (Wilson interval, pass^k, decisions) and the per-run tallies it reads."""
