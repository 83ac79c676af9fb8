"""Every reader keeps the cases apart (issue 28): results, compare and report, on records that
differ from one another in one case field each, stored through the real ingest with the real
wiring of two NVLink quads (geometry), and read back by `wirewise` processes. And docs/results.md
states the case exactly as wirewise.case defines it."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest

from wirewise.case import ALL_CASE_FIELDS, CASE_FIELDS, meaning
from wirewise.record import ResultRecord
from wirewise.topology import topology_from_text
from tests.conftest import FIXTURES, ROOT, wirewise, wirewise_json

QUADS = topology_from_text((FIXTURES / "topo" / "synthetic-h200-nvl-8gpu-two-quads.txt").read_text(), "quads")
WHEN = datetime(2026, 12, 1, 10, tzinfo=timezone.utc)


def _collective(busbw: float, campaign: str, **fields) -> ResultRecord:
    base = dict(workload="collective", op="all_reduce", bytes=2**30, dtype="float32", in_place=False, gpus=[0, 1, 2, 3],
                gpu_count=4, world_size=4, node="quad-a", fingerprint=QUADS.fingerprint, fabric=QUADS.fabric,
                time_us=1.0, algbw_gbs=busbw / 1.5, busbw_gbs=busbw, params={"transport": "default"},
                extra={"redop": "sum", "root": -1}, started_at=WHEN, ended_at=WHEN, campaign=campaign)
    return ResultRecord(**{**base, **fields})


def _train(tokens: float, campaign: str, **fields) -> ResultRecord:
    base = dict(workload="train", model="mistral-1b", strategy="ddp", micro_batch=8, seq_len=1024, gpus=[0],
                gpu_count=1, world_size=1, node="quad-a", fingerprint=QUADS.fingerprint, fabric=QUADS.fabric,
                tokens_per_s=tokens, step_time_s=0.1, params={"engine": "native", "precision": "bf16-mixed", "compile": False},
                extra={"precision": "bf16-mixed"}, started_at=WHEN, ended_at=WHEN, campaign=campaign)
    return ResultRecord(**{**base, **fields})


# field planted -> (the baseline's figure, the planted record's settings and figure). Each
# planted record differs from the baseline in that one field and measures another figure.
COLLECTIVE = {
    "dtype": dict(dtype="bfloat16"),
    # 4 ranks either way: 2 x 2, labelled as `fleet pairs` labels its tests (placement is no case field)
    "node_count": dict(gpus=[0, 1], node_count=2, nodes=["quad-a", "quad-b"],
                       params={"transport": "default", "placement": "pair"}),
    "cuda_graph": dict(params={"transport": "default", "cuda_graph": True}),
    "in_place": dict(in_place=True),
    "transport": dict(params={"transport": "pcie"}),
    "source": dict(source="nccl-tests"),
    "geometry": dict(gpus=[0, 1, 4, 5]),
}
TRAIN = {
    "precision": dict(params={"engine": "native", "precision": "bf16", "compile": False}, extra={"precision": "bf16"}),
    "compile": dict(params={"engine": "native", "precision": "bf16-mixed", "compile": True}),
    "micro_batch": dict(micro_batch=4),
    "transport": dict(params={"engine": "native", "precision": "bf16-mixed", "compile": False, "transport": "pcie"}),
    "source": dict(source="job", params={"engine": "custom", "precision": "bf16-mixed"}),
}
BUSBW, TOKENS = 300.0, 50_000.0


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> str:
    """Two campaigns: `base` holds two runs of the baseline case of each workload; `planted`
    one run of each planted case (figures 100 + 10 i: none is the baseline's)."""
    from wirewise.orchestrator.record.ingest import store_measurement
    from wirewise.orchestrator.store import Store

    url = f"sqlite:///{tmp_path_factory.mktemp('cases') / 'wirewise.db'}"
    records = [_collective(BUSBW, "base"), _collective(BUSBW, "base"), _train(TOKENS, "base"), _train(TOKENS, "base")]
    records += [_collective(100.0 + 10 * i, "planted", **f) for i, f in enumerate(COLLECTIVE.values())]
    records += [_train(10_000.0 + 1000 * i, "planted", **f) for i, f in enumerate(TRAIN.values())]
    store_measurement(Store(url), records, QUADS, node="quad-a")
    return url


def test_results_shows_each_planted_field_as_its_own_case(planted):
    rows = wirewise_json("results", "--db", planted)
    collective = [r for r in rows if r["workload"] == "collective"]
    train = [r for r in rows if r["workload"] == "train"]
    assert len(collective) == 1 + len(COLLECTIVE) and len(train) == 1 + len(TRAIN)
    [base] = [r for r in collective if r["busbw_gbs_median"] == BUSBW]
    assert (base["count"], base["busbw_gbs_min"], base["busbw_gbs_max"]) == (2, BUSBW, BUSBW)  # nothing pooled in
    assert {(r["node_count"], r["ranks_per_node"]) for r in collective} == {(1, 4), (2, 2)}
    assert {r["geometry"] for r in collective} == {"packed", "spread"}
    [base] = [r for r in train if r["tokens_per_s_median"] == TOKENS]
    assert base["count"] == 2 and {r["count"] for r in train if r is not base} == {1}
    # wide enough for every varying field (scope too: the 2-node run's second node has no wiring stored)
    table = wirewise("results", "--workload", "collective", "--db", planted, env={"COLUMNS": "220"}, check=True).stdout
    assert "2 x 2" in table and "1 x 4" in table and "graph" in table and "bfloat16" in table


@pytest.mark.parametrize("field", ALL_CASE_FIELDS)
def test_group_by_takes_every_case_field(planted, field):
    rows = wirewise_json("results", "--group-by", field, "--db", planted)
    assert rows and all(field in row for row in rows)


def test_compare_pairs_only_like_cases(planted):
    """`base` and `planted` share no case: compare says so instead of a ratio between unlike runs."""
    result = wirewise_json("compare", "campaign:base", "campaign:planted", "--db", planted)
    assert result["cases"] == []
    assert len(result["only_a"]) == 2 and len(result["only_b"]) == len(COLLECTIVE) + len(TRAIN)
    out = wirewise("compare", "campaign:base", "campaign:planted", "--db", planted, check=True).stdout
    assert "no case in common" in out


def test_the_report_draws_each_planted_case_apart(planted, tmp_path):
    written = wirewise_json("report", "--out", str(tmp_path / "out"), "--db", planted)
    figures = {figure["name"]: figure for figure in written["figures"]}
    by_size = [s for panel in figures["busbw-by-size-all_reduce"]["panels"] for s in panel["series"]]
    assert len(by_size) == 1 + len(COLLECTIVE) and len({s["label"] for s in by_size}) == len(by_size)
    assert sorted(s["y"][0] for s in by_size) == sorted([BUSBW, *(100.0 + 10 * i for i in range(len(COLLECTIVE)))])
    # the strategies panel: one bar per setting (x), a series per fabric and transport; each
    # planted training case is a bar of its own, never pooled into the baseline's
    series = figures["strategies-mistral-1b"]["panels"][0]["series"]
    bars = [y for s in series for y in s["y"] if y is not None]
    assert sorted(bars) == sorted([TOKENS, *(10_000.0 + 1000 * i for i in range(len(TRAIN)))])
    named = {(s["label"], x) for s in series for x, y in zip(s["x"], s["y"]) if y is not None}
    assert len(named) == len(bars)  # each bar told apart by its series' label and its setting


def test_a_pair_test_is_found_by_its_label(planted):
    """`results --placement pair` finds what pair tests store (their label), and only that."""
    [row] = wirewise_json("results", "--placement", "pair", "--db", planted)
    assert (row["node_count"], row["ranks_per_node"], row["busbw_gbs_median"]) == (2, 2, 110.0)
    [row] = wirewise_json("results", "--placement", "pair", "--group-by", "placement,nodes", "--db", planted)
    assert (row["placement"], row["nodes"]) == ("pair", ["quad-a", "quad-b"])


DOC = (ROOT / "docs" / "results.md").read_text()


def test_the_docs_state_the_case_as_the_code_defines_it():
    section = DOC.split("## The case", 1)[1].split("\n## ", 1)[0]
    for workload, label in (("collective", "Collectives"), ("train", "Training")):
        [line] = [line for line in section.splitlines() if line.startswith(f"- {label}:")]
        assert re.findall(r"`([a-z_]+)`", line) == list(CASE_FIELDS[workload])
    rows = [line.split("|")[1:-1] for line in section.splitlines() if line.startswith("| `")]
    documented = {re.search(r"`([a-z_]+)`", row[0]).group(1): [cell.strip() for cell in row[1:]] for row in rows}
    assert list(documented) == list(ALL_CASE_FIELDS)
    for name, (collective, train, what) in documented.items():
        assert (collective == "yes", train == "yes") == (name in CASE_FIELDS["collective"], name in CASE_FIELDS["train"])
        assert what == meaning(name)
