"""Store the user's own jobs that `wirewise run` submitted, with the placement each got."""

from __future__ import annotations

from typing import Any

from wirewise.orchestrator.store import Store


def record_placed_job(store: Store, **columns: Any) -> int:
    """One placed_jobs row (the columns of schema.PLACED_JOBS); returns its id."""
    from sqlalchemy import insert

    from wirewise.orchestrator.store.schema import PLACED_JOBS

    with store.session() as session:
        return session.execute(insert(PLACED_JOBS).values(**columns)).inserted_primary_key[0]
