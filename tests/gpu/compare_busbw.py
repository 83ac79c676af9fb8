"""Put wirewise's and nccl-tests' busbw side by side, from one database (one query).

    python tests/gpu/compare_busbw.py DB_URL [--from-bytes 256M]

Rows are matched on (op, bytes, in_place); the last column is wirewise / nccl-tests - 1.
Exit status 1 when any matched size at or above --from-bytes differs by more than 5%.
"""

from __future__ import annotations

import argparse
import sys

from sqlalchemy import select

from wirewise.workloads.collective import parse_size
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.models import ResultRow

TOLERANCE = 0.05


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("--from-bytes", default="256M")
    args = parser.parse_args()
    threshold = parse_size(args.from_bytes)
    with Store(args.db).session() as s:
        rows = s.execute(
            select(ResultRow.source, ResultRow.op, ResultRow.bytes, ResultRow.in_place, ResultRow.busbw_gbs, ResultRow.gpu_count)
            .where(ResultRow.workload == "collective", ResultRow.status == "ok")
        ).all()
    best: dict[tuple, dict[str, float]] = {}
    for source, op, nbytes, in_place, busbw, _gpus in rows:
        key = (op, nbytes, bool(in_place))
        best.setdefault(key, {})
        best[key][source] = max(busbw, best[key].get(source, 0.0))
    print(f"{'op':>15} {'bytes':>12} {'in-place':>8} {'wirewise':>9} {'nccl-tests':>10} {'diff':>7}")
    worst = 0.0
    for (op, nbytes, in_place), by_source in sorted(best.items()):
        if "wirewise" not in by_source or "nccl-tests" not in by_source:
            continue
        ours, theirs = by_source["wirewise"], by_source["nccl-tests"]
        diff = ours / theirs - 1 if theirs else float("nan")
        if nbytes >= threshold:
            worst = max(worst, abs(diff))
        print(f"{op:>15} {nbytes:>12} {str(in_place):>8} {ours:>9.2f} {theirs:>10.2f} {diff:>+7.1%}")
    print(f"# largest |diff| at >= {args.from_bytes}: {worst:.1%} (target {TOLERANCE:.0%})")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
