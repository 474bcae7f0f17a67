"""One module per resource; each router carries its auth dependency."""
