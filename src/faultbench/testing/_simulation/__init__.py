"""The simulation API, usable outside pytest: repeat, fault_inject, mock tools, personas and simulated users, scenarios."""
