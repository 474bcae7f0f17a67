"""The IronCalc calculation engine (the default): fast, in-process, Rust underneath."""
