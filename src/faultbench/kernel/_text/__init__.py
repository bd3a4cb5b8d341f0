"""Text for people: how values, names and ids are shown, sorted and suggested. The kernel's lowest stage."""
