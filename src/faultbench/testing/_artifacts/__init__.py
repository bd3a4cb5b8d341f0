"""What a test session leaves behind: the HTML run report, the session file, shrinking of a failing run's faults."""
