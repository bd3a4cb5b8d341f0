"""Fault kinds (the registry), fault rules as a call sees them, and the seeded fault plan."""
