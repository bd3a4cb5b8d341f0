"""Tool calls: operations as transactions, the call pipeline (faults, effects, results), batching of concurrent calls, and the event loops seen through their public APIs."""
