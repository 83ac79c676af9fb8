"""Alembic migrations for the wirewise store (applied by orchestrator.store.Store)."""
