"""What `import nccl-tests` prints of a log it stored (and gives with --json; docs/contracts.md
lists the keys): the file, its node and wiring, and one entry per run: op, status, rows,
ranks and how they are known, hosts, GPUs, versions, peak and logged average busbw, transport,
CUDA graph mode and environment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wirewise.orchestrator.record.nccl_tests.importing import LogImport
    from wirewise.orchestrator.record.nccl_tests.records import SectionResult


def import_summary(imported: LogImport, new: int) -> dict[str, Any]:
    """What was imported, one entry per run: op, status, rows, ranks, hosts, peak busbw."""
    return {
        "file": str(imported.file),
        "node": imported.node,
        "rows": imported.record_count,  # results rows: two per size (out of place, in place), one per failed run
        "new": new,
        "fingerprint": imported.topology.fingerprint if imported.topology else None,
        "fabric": imported.topology.fabric if imported.topology else None,
        "sections": [run_summary(result) for result in imported.results if result.record_count],
        "failed": [run_summary(result) for result in imported.results if result.status == "failed"],
        "skipped": imported.skipped,
    }


def run_summary(result: SectionResult) -> dict[str, Any]:
    section = result.section
    rows = [row for row in section.rows if row.size]
    timings = [(t.busbw_gbs, row.size) for row in rows for t in (row.out_of_place, row.in_place) if t]
    peak = max(timings, key=lambda pair: pair[0]) if timings else None
    base = result.base
    params = base.get("params", {})
    return {
        "op": result.op,
        "line": section.first_line,
        "status": result.status,
        "error": result.error,
        "rows": len(timings),
        "sizes": len(rows),  # log rows stored
        "zero_size_rows": section.zero_size_rows,
        "ranks": result.ranks.count,
        "ranks_exact": result.ranks.exact,
        "ranks_from": result.ranks.source,
        "node": result.node,
        "hosts": section.hosts,
        "gpus": base.get("gpus", []),
        "nccl_tests": section.version,
        "versions": base.get("versions", {}),
        "peak_busbw_gbs": peak[0] if peak else None,
        "peak_bytes": peak[1] if peak else None,
        "largest_bytes": max((row.size for row in rows), default=None),
        "avg_busbw_gbs": section.average_busbw,
        "transport": params.get("transport"),
        "cuda_graph": params.get("cuda_graph"),
        "env": base.get("env", {}),
    }
