"""Repositories own the SQL. Every query on tenant data takes ``tenant_id`` as a keyword."""
