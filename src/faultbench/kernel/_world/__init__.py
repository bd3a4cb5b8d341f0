"""`World`: the stages brought together; the current world; replay of a log."""
