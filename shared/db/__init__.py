"""Persistence: typed models, engine and session factory, migrations."""
