"""Store the user's own jobs that `wirewise run` submitted, with the placement each got."""

from __future__ import annotations

from typing import Any

from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.models import PlacedJobRow


def record_placed_job(store: Store, **fields: Any) -> int:
    """One placed_jobs row (the columns of PlacedJobRow); returns its id."""
    with store.session() as session:
        row = PlacedJobRow(**fields)
        session.add(row)
        session.flush()
        return row.id
