"""The pytest plugin's parts: run items and their seeds, fixture handles, run outputs (report, session file, shrinking)."""
