"""The database, and every SQL statement wirewise runs on it.

    engine.py     Store: the URL, migrations, readers (queries) and sessions (writes)
    read.py       the read path: SQL text on the driver's connection, the two dialects
    schema.py     the tables (SQLAlchemy Core); orm.py maps the ORM onto them (for tests and scripts)
    results.py    results: Filters, rows, groups, names, the history placement and advice read
    topology.py   wirings and nodes, and node_wirings, the one join of the two
    campaigns.py  campaigns and their tasks
    placed_jobs.py  the commands `wirewise run` submitted

Nothing outside this package (and the migrations, db/) imports SQLAlchemy (tests/test_architecture.py).
"""

from wirewise.orchestrator.store.engine import HEAD, DatabaseUnavailable, NoDatabase, Store, resolve_url

__all__ = ["HEAD", "DatabaseUnavailable", "NoDatabase", "Store", "resolve_url"]
