"""wirewise next to nccl-tests, per size, from one database, on the same wiring, GPU count,
transport, timing mode and NCCL environment; exit status 1 when a target is missed.

    python tests/gpu/compare_busbw.py DB_URL --fingerprint FP --gpus N --transport default [--cuda-graph]
        [--markdown OUT.md]

Rows are matched on (op, bytes, in_place), both sides restricted to the fingerprint, the GPU
count, params.transport, params.cuda_graph and the same NCCL_* environment (an nccl-tests log
is imported with --transport and --env, so both sides say how they ran); the newest row of
each side wins where a size was measured twice. Targets (issue 13):
- busbw at least BUSBW_FLOOR x nccl-tests' at every size from BANDWIDTH_FROM bytes up;
- time per call at most TIME_CEILING x nccl-tests' from 8 B to LATENCY_UP_TO bytes.
Sizes in neither range are printed, not judged. A comparison with no matched row fails too,
and so does a row of either side with wrong elements.
"""

from __future__ import annotations

import argparse
import sys

from verdict import report  # tests/gpu/verdict.py, beside this script
from dataclasses import dataclass

from sqlalchemy import select

from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.orm import ResultRow

BUSBW_FLOOR = 0.95
BANDWIDTH_FROM = 1024**2
TIME_CEILING = 1.3
LATENCY_UP_TO = 512 * 1024
MACHINE_ENV = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")  # which GPUs, not how NCCL moves data


@dataclass(frozen=True)
class Side:
    time_us: float
    busbw_gbs: float
    env: tuple
    wrong: int | None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("--fingerprint", required=True)
    parser.add_argument("--gpus", type=int, required=True)
    parser.add_argument("--transport", default="default")
    parser.add_argument("--cuda-graph", action="store_true")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    sides = _load(args)
    lines, problems = _compare(sides)
    return report(lines, problems, args.markdown)


def _load(args) -> dict[str, dict[tuple, Side]]:
    """{source: {(op, bytes, in_place): newest Side}} for the rows that fit every filter."""
    with Store(args.db).session() as session:
        rows = session.scalars(
            select(ResultRow)
            .where(ResultRow.workload == "collective", ResultRow.status == "ok", ResultRow.fingerprint == args.fingerprint,
                   ResultRow.gpu_count == args.gpus)
            .order_by(ResultRow.ended_at)
        ).all()
        sides: dict[str, dict[tuple, Side]] = {"wirewise": {}, "nccl-tests": {}}
        for row in rows:
            params = row.params or {}
            if params.get("transport") != args.transport or bool(params.get("cuda_graph")) != args.cuda_graph:
                continue
            env = tuple(sorted((k, v) for k, v in (row.env or {}).items() if k not in MACHINE_ENV))
            sides[row.source][(row.op, row.bytes, bool(row.in_place))] = Side(row.time_us, row.busbw_gbs, env, row.wrong)
    return sides


def _compare(sides: dict[str, dict[tuple, Side]]) -> tuple[list[str], list[str]]:
    ours, theirs = sides["wirewise"], sides["nccl-tests"]
    lines = [
        "| op | form | bytes | wirewise us | nccl-tests us | time ratio | wirewise busbw | nccl-tests busbw | busbw ratio | target |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    problems = []
    matched = sorted(set(ours) & set(theirs), key=lambda k: (k[0], k[2], k[1]))
    for key in matched:
        a, b = ours[key], theirs[key]
        problems += [f"{key}: {source} counted {side.wrong} wrong elements"
                     for source, side in (("wirewise", a), ("nccl-tests", b)) if side.wrong]
        if a.env != b.env:
            problems.append(f"{key}: NCCL environments differ: wirewise {dict(a.env)}, nccl-tests {dict(b.env)}")
            continue
        time_ratio = a.time_us / b.time_us
        busbw_ratio = a.busbw_gbs / b.busbw_gbs if b.busbw_gbs else float("nan")
        verdict = _verdict(key[1], time_ratio, busbw_ratio)
        if verdict.startswith("MISSED"):
            problems.append(f"{key}: {verdict}")
        lines.append(
            f"| {key[0]} | {'in' if key[2] else 'out'} | {key[1]} | {a.time_us:.2f} | {b.time_us:.2f} | {time_ratio:.2f} | "
            f"{a.busbw_gbs:.2f} | {b.busbw_gbs:.2f} | {busbw_ratio:.3f} | {verdict} |"
        )
    if not matched:
        problems.append(f"no size measured by both tools under these filters (wirewise {len(ours)}, nccl-tests {len(theirs)} rows)")
    return lines, problems


def _verdict(nbytes: int, time_ratio: float, busbw_ratio: float) -> str:
    if nbytes >= BANDWIDTH_FROM:
        return "ok" if busbw_ratio >= BUSBW_FLOOR else f"MISSED busbw {busbw_ratio:.3f}x < {BUSBW_FLOOR}x"
    if nbytes <= LATENCY_UP_TO:
        return "ok" if time_ratio <= TIME_CEILING else f"MISSED time {time_ratio:.2f}x > {TIME_CEILING}x"
    return "-"


if __name__ == "__main__":
    sys.exit(main())
