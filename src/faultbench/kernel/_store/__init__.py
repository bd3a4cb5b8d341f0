"""A world's state and its log: events, the pure reducer, indexes, the persistent log, the book that owns both, tables and the virtual clock."""
