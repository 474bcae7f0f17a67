"""The fidelity check (how closely an engine reproduces the values Excel saved) and the
per-workbook engine choice built on it."""
