"""World files -> `WorldSpec`: the spec types and the whole world-file reader (YAML, records, operations, seed rows, the fault block, handlers, tools defined in code, tool schemas)."""
