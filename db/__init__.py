"""Alembic migrations for the wirewise store (applied by wirewise.orchestrator.store.Store).

HEAD names the newest revision in db/versions, so opening a current database costs one
query instead of loading alembic; tests/store checks it against alembic's own view.
Bump it with every new migration.
"""

HEAD = "0016"
