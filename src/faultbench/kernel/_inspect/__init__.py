"""Reading what happened: the trace of calls, trace checks, diffs of states and logs, and the faults a run received."""
