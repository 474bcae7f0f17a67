"""Services own the rules: tenancy, permissions, state transitions. They raise shared.errors."""
