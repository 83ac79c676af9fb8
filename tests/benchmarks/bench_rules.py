"""The default rules' false-alarm rate on healthy history and their detection rate for planted
busbw drops of 5, 10 and 30% (targets: at most 1% false alarms; a 5% drop caught in at least
95% of trials, with the rules' three repeats).

Healthy history is generated from the spread of real repeated measurements:
- run to run: the same case measured twice on one node, wirewise's own eager runs against
  nccl-tests on the 2x H200 node (tests/fixtures/measured-2xh200/), and all_reduce out of place
  against in place within one nccl-tests run (where the two do not differ by design);
- node to node: one case on two H100 nodes of one cluster (tests/fixtures/nccl-tests/,
  cnode3-002 and cnode3-007, all_reduce, both forms).
Each pair's log ratio over sqrt(2) is one draw of one measurement's noise (two independent
measurements differ by sqrt(2) of it), drawn back with a random sign. A node type of 8 nodes
with 3 repeats each is the history; a ninth node's 3 new repeats are judged by the real rule
(wirewise.orchestrator.health.judge.below_baseline), healthy or with every size lowered by the
planted drop. Sizes 32M..1G (the rule's min_bytes and up), both forms: 12 judged sizes.

These nodes are quiet (0.5% run to run): a stress row multiplies every draw by 8 (4%, a noisy
fabric) to show the spread term at work: the rule then asks for more before it fires.
"""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirewise.case import case_of, derive  # noqa: E402
from wirewise.orchestrator.health.judge import Cases, below_baseline  # noqa: E402
from wirewise.orchestrator.health.rules import default_rules  # noqa: E402
from wirewise.orchestrator.record.nccl_tests import parse_log  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TRIALS = 1000
NODES, REPEATS = 8, 3
DROPS = (0.05, 0.10, 0.30)
FALSE_ALARM_TARGET, DETECTION_TARGET = 0.01, 0.95
MIN_BYTES = 32 << 20


def _rows(path: Path):
    return [row for section in parse_log(path.read_text()) for row in (section.rows or []) if row.size >= MIN_BYTES]


def noise_pools() -> tuple[list[float], list[float]]:
    """(run-to-run draws, node-to-node draws) as log ratios of one measurement."""
    run = []
    measured = FIXTURES / "measured-2xh200"
    own = {}
    for line in (measured / "wirewise-collectives.jsonl").read_text().splitlines():
        r = json.loads(line)
        own[(r["op"], r["params"]["transport"], r["bytes"], bool(r["in_place"]))] = r["busbw_gbs"]
    for path in sorted(measured.glob("nccl-tests-*.txt")):
        op, transport = path.stem.split("-")[2:4]
        for row in _rows(path):
            for in_place, timing in ((False, row.out_of_place), (True, row.in_place)):
                if timing is not None and (op, transport, row.size, in_place) in own:
                    run.append(math.log(own[(op, transport, row.size, in_place)] / timing.busbw_gbs) / math.sqrt(2))
            if op == "all_reduce" and row.in_place is not None:
                run.append(math.log(row.out_of_place.busbw_gbs / row.in_place.busbw_gbs) / math.sqrt(2))
    a = {r.size: r for r in _rows(FIXTURES / "nccl-tests" / "cnode3-h100-1node-8gpu-five-collectives-2.17.8.log")[:10]}
    b = {r.size: r for r in _rows(FIXTURES / "nccl-tests" / "nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt")}
    node = [math.log(getattr(a[s], form).busbw_gbs / getattr(b[s], form).busbw_gbs) / math.sqrt(2)
            for s in sorted(set(a) & set(b)) for form in ("out_of_place", "in_place")]
    return run, node


def curve() -> dict[tuple[int, bool], float]:
    """The true busbw per (size, in place): the 2x H200 all_reduce, as nccl-tests measured it."""
    rows = _rows(FIXTURES / "measured-2xh200" / "nccl-tests-all_reduce-default.txt")
    return {**{(r.size, False): r.out_of_place.busbw_gbs for r in rows}, **{(r.size, True): r.in_place.busbw_gbs for r in rows}}


def result_rows(node: str, bias: float, drop: float, sizes, run, rng, first_id: int, stamp: str) -> list[dict]:
    out = []
    for repeat in range(REPEATS):
        for (size, in_place), busbw in sizes.items():
            noise = rng.choice(run) * rng.choice((-1, 1))
            row = {
                "id": first_id + len(out), "node": node, "status": "ok", "workload": "collective", "source": "wirewise",
                "campaign": None, "fingerprint": "f" * 64, "op": "all_reduce", "bytes": size, "device": "gpu", "gpus": [0, 1], "ranks": 2, "node_count": 1,
                "placement": None, "transport": "default", "in_place": in_place, "dtype": "float32",
                "busbw_gbs": busbw * math.exp(bias + noise) * (1 - drop), "started_at": f"{stamp}-{repeat}",
            }
            stored = {**row, **derive(row)}  # its derived case columns and case_key, as the store keeps them
            out.append({**case_of(stored), **stored})  # every case field a stored row has, None where unset
    return out


def flagged_share(drop: float, repeats: int, run, node_pool, sizes, rng, scale: float = 1.0) -> float:
    rules = default_rules().model_copy(update={"repeats": repeats})
    run, node_pool = [x * scale for x in run], [x * scale for x in node_pool]
    hits = 0
    for _ in range(TRIALS):
        history = []
        for n in range(NODES):
            history += result_rows(f"n{n}", rng.choice(node_pool) * rng.choice((-1, 1)), 0.0, sizes, run, rng, len(history), "1")
        judged = result_rows("suspect", rng.choice(node_pool) * rng.choice((-1, 1)), drop, sizes, run, rng, len(history), "2")
        found, _ = below_baseline("suspect", Cases(history + judged[: repeats * len(sizes)]), "collective", rules, {}, [])
        hits += bool(found)
    return hits / TRIALS


def main() -> int:
    rng = random.Random(19)
    run, node_pool = noise_pools()
    sizes = curve()
    spread = lambda pool: 100 * 1.4826 * sorted(abs(x) for x in pool)[len(pool) // 2]  # noqa: E731
    print(f"noise from real repeats: run to run {len(run)} draws (robust sigma {spread(run):.2f}%), "
          f"node to node {len(node_pool)} draws ({spread(node_pool):.2f}%); {NODES} nodes x {REPEATS} repeats of history, "
          f"{len(sizes)} judged sizes, {TRIALS} trials each")
    ok = True
    for repeats, scale in ((3, 1.0), (1, 1.0), (3, 8.0)):
        alarms = flagged_share(0.0, repeats, run, node_pool, sizes, rng, scale)
        line = f"defaults, {repeats} repeat(s){', noise x8 (stress)' if scale != 1 else ''}: false alarms {100 * alarms:.2f}%"
        target = alarms <= FALSE_ALARM_TARGET
        for drop in DROPS:
            caught = flagged_share(drop, repeats, run, node_pool, sizes, rng, scale)
            line += f"; {100 * drop:.0f}% drop caught {100 * caught:.1f}%"
            if drop == 0.05:
                target = target and caught >= DETECTION_TARGET
        if (repeats, scale) == (3, 1.0):
            ok = target
            line += f" (targets: false alarms <= {100 * FALSE_ALARM_TARGET:.0f}%, 5% caught >= {100 * DETECTION_TARGET:.0f}%: {'ok' if ok else 'MISSED'})"
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
