"""Eager and CUDA-graph sweeps of `wirewise bench collectives --json` side by side, per size, with
the bare-NCCL floor (tests/gpu/nccl_floor.py) where given; checks that can fail.

    python3 tests/gpu/fidelity_table.py EAGER.json GRAPH.json [--floor FLOOR.json] [--markdown OUT.md]

Checks (exit status 1 when any fails):
- every row of both sweeps ended ok with 0 wrong elements (the sweeps ran with --check; in
  graph mode the checked call itself was replayed from a graph);
- both sweeps have the same (op, bytes, in_place) rows, and out-of-place and in-place rows
  for all_gather and reduce_scatter;
- each row says how it was timed: cuda_graph false/true, timer cuda-events/cuda-graph;
- up to LATENCY_BOUND bytes, where the host's launch cost is the whole story, a graph
  replay costs less per call than an eager call at every size (the point of the mode).
"""

from __future__ import annotations

import argparse
import json
import sys

from verdict import report  # tests/gpu/verdict.py, beside this script

LATENCY_BOUND = 512 * 1024
BOTH_FORMS = ("all_gather", "reduce_scatter")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("eager")
    parser.add_argument("graph")
    parser.add_argument("--floor")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    eager, graph = (_by_key(json.load(open(path))) for path in (args.eager, args.graph))
    floor = {(r["op"], r["bytes"], r["in_place"]): r for r in json.load(open(args.floor))} if args.floor else {}
    problems = _problems(eager, graph)
    lines = _table(eager, graph, floor)
    return report(lines, problems, args.markdown)


def _by_key(rows: list[dict]) -> dict[tuple, dict]:
    return {(r["op"], r["bytes"], r["in_place"]): r for r in rows}


def _problems(eager: dict, graph: dict) -> list[str]:
    problems = []
    if set(eager) != set(graph):
        problems.append(f"the sweeps differ in rows: {sorted(set(eager) ^ set(graph))[:6]}")
    for mode, rows, timer in (("eager", eager, "cuda-events"), ("graph", graph, "cuda-graph")):
        for key, r in rows.items():
            if r["status"] != "ok" or r["wrong"] != 0:
                problems.append(f"{mode} {key}: status {r['status']}, wrong {r['wrong']} {r.get('error') or ''}")
            if r["cuda_graph"] != (mode == "graph") or r.get("timer") not in (None, timer):
                problems.append(f"{mode} {key}: recorded as cuda_graph={r['cuda_graph']} timer={r.get('timer')}")
    for op in BOTH_FORMS:
        forms = {in_place for (o, _, in_place) in eager if o == op}
        if forms and forms != {False, True}:
            problems.append(f"{op}: forms {sorted(forms)}, want out of place and in place")
    for key in sorted(set(eager) & set(graph)):
        if key[1] <= LATENCY_BOUND and not graph[key]["time_us"] < eager[key]["time_us"]:
            problems.append(f"{key}: graph {graph[key]['time_us']:.2f} us per call, not below eager {eager[key]['time_us']:.2f} us")
    return problems


def _table(eager: dict, graph: dict, floor: dict) -> list[str]:
    lines = [
        "| op | form | bytes | eager us | graph us | graph/eager | eager busbw | graph busbw | NCCL eager us | NCCL graph us |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key in sorted(set(eager) & set(graph), key=lambda k: (k[0], k[2], k[1])):  # op, form, size
        e, g, f = eager[key], graph[key], floor.get(key)
        nccl = f"{f['eager_us']:.2f} | {f['graph_us']:.2f}" if f else "- | -"
        lines.append(
            f"| {key[0]} | {'in' if key[2] else 'out'} | {key[1]} | {e['time_us']:.2f} | {g['time_us']:.2f} | "
            f"{g['time_us'] / e['time_us']:.3f} | {e['busbw_gbs']:.2f} | {g['busbw_gbs']:.2f} | {nccl} |"
        )
    return lines


if __name__ == "__main__":
    sys.exit(main())
