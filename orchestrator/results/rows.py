"""One row per stored result, as doctor, baselines and health checks read them.

A row is the store's (store.results.select_rows: the case's stored columns, gpus the ranks)
with what a run asked for and what its ranks peaked at made one value each. The geometry a
run got is a stored case column (wirewise.case.geometry_of, computed when the record is
stored), never derived here.
"""

from __future__ import annotations

from typing import Any

from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.results import Filters, select_rows


def result_rows(store: Store, filters: Filters) -> list[dict[str, Any]]:
    """Every stored row that matches, in id order, as a dict of what reports use: the row's
    fields (store.results.ROW_FIELDS: the case's stored columns, gpus the ranks), `placement`
    the placement asked for (None where a run recorded none; what it got is the stored
    `geometry`, wirewise.case.geometry_of) and peak_mem_bytes the largest rank's."""
    return [_result_row(row) for row in select_rows(store, filters)]


def _result_row(row: dict[str, Any]) -> dict[str, Any]:
    """One row of store.results.select_rows made a result row, in place."""
    row["placement"] = row.pop("recorded_placement")
    peaks = row["peak_mem_bytes"]
    row["peak_mem_bytes"] = max(peaks) if peaks else None
    return row
