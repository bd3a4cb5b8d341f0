"""World files -> `WorldSpec`: YAML with positions, then one pass each for records, operations, seed plans and the fault block, every problem at file:line:col."""
