"""Alembic environment: the URL comes from the Store, the tables from wirewise.orchestrator.store.schema."""

from alembic import context

from wirewise.orchestrator.store.schema import METADATA

config = context.config
url = config.attributes.get("connection_url") or config.get_main_option("sqlalchemy.url")


def run_migrations_offline() -> None:
    context.configure(url=url, target_metadata=METADATA, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    # The Store hands over its connection, inside the transaction that holds the migration
    # lock (Store.upgrade): the migration is then all of that one transaction. Without one
    # (the alembic command line), the Store's engine set-up, so SQLite gets its pragmas and
    # BEGIN IMMEDIATE.
    given = config.attributes.get("connection")
    if given is not None:
        context.configure(connection=given, target_metadata=METADATA, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    from wirewise.orchestrator.store.engine import make_engine

    engine = make_engine(url)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=METADATA, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
