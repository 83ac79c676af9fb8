"""`wirewise results` as a process over real runs and imported nccl-tests logs (conftest.py).

Expected figures are derived by hand from the H100 log (tests/fixtures/nccl-tests) and the
noise factors of the four nodes: at 1 GiB out of place the log says 469.67 GB/s, so the nodes
hold 469.67 x (1, 0.99, 1.01, 1.005) = 469.67, 464.97, 474.37, 472.02.
"""

from __future__ import annotations

import csv
import io
import json

import pytest

from tests.conftest import wirewise, wirewise_json
from tests.report.conftest import H100_TOPO, import_log


def results(url: str, *args: str) -> list[dict]:
    return wirewise_json("results", *args, "--db", url)


def test_a_case_aggregates_its_runs_on_every_node(report_db):
    rows = results(report_db, "--fabric", "nvlink-all", "--op", "all_reduce", "--bytes", "1G")
    [out] = [row for row in rows if row["in_place"] is False]
    assert (out["source"], out["ranks"], out["node_count"], out["ranks_per_node"], out["geometry"], out["status"],
            out["count"]) == ("nccl-tests", 8, 1, 8, "packed", "ok", 4)
    assert "placement" not in out  # the placement asked for is no case field (an imported log asked for none)
    assert out["busbw_gbs_median"] == pytest.approx((469.67 + 472.02) / 2)
    assert (out["busbw_gbs_min"], out["busbw_gbs_max"]) == (464.97, 474.37)
    assert out["busbw_gbs_spread"] == pytest.approx((474.37 - 464.97) / 470.845)


@pytest.mark.parametrize(("args", "expected"), [
    (("--node", "h100-b", "--bytes", "16G"), {("nccl-tests", 16 * 2**30, 1)}),
    (("--campaign", "camp-a", "--include-cpu"), {("wirewise", size, 2) for size in (1024, 4096, 16384)}),
    (("--campaign", "camp-a", "--campaign", "camp-b", "--include-cpu", "--transport", "default"),
     {("wirewise", size, 4) for size in (1024, 4096, 16384)}),
    (("--transport", "pcie", "--include-cpu"), {("wirewise", size, 1) for size in (1024, 4096, 16384)}),
    (("--source", "nccl-tests", "--since", "1d"), {("nccl-tests", 2**k, 4) for k in range(25, 35)}),
    (("--geometry", "packed", "--include-cpu", "--gpus", "8"), {("nccl-tests", 2**k, 4) for k in range(25, 35)}),
    (("--campaign", "camp-a"), set()),  # CPU ranks only: left out unless --include-cpu
    (("--since", "2099-01-01", "--include-cpu"), set()),
])
def test_filters_return_the_matching_rows(report_db, args, expected):
    rows = results(report_db, *args)
    assert {(row["source"], row["bytes"], row["count"]) for row in rows} == expected


def test_fingerprint_prefix_and_node(report_db):
    fingerprint = wirewise_json("topo", "show", "--from-file", str(H100_TOPO))["fingerprint"]
    rows = results(report_db, "--fingerprint", fingerprint[:6], "--node", "h100-c", "--bytes", "16G")
    assert sorted(row["busbw_gbs_median"] for row in rows) == [486.94, 487.09]  # 482.12, 482.27 x 1.01


def test_training_rows_show_training_metrics(report_db):
    rows = results(report_db, "--workload", "train", "--include-cpu")
    assert {(row["model"], row["strategy"], row["ranks"], row["count"]) for row in rows} == {
        ("tiny-mistral", "ddp", 2, 1), ("tiny-mistral", "fsdp", 2, 1)}
    for row in rows:
        assert row["tokens_per_s_median"] > 0 and row["step_time_s_median"] > 0 and row["peak_mem_bytes_median"] > 0
        assert not any(key.startswith("busbw") for key in row)


def test_a_timeout_is_its_own_row_without_figures(report_db):
    [row] = results(report_db, "--status", "timeout", "--include-cpu")
    assert (row["status"], row["count"], row["workload"]) == ("timeout", 1, "collective")
    assert not any(key.endswith("_median") for key in row)
    ok = results(report_db, "--include-cpu", "--op", "all_reduce", "--bytes", "1K", "--transport", "default")
    assert {row["status"] for row in ok} == {"ok"}


def test_group_by_node(report_db):
    rows = results(report_db, "--source", "nccl-tests", "--bytes", "1G", "--group-by", "node")
    assert {row["node"]: row["busbw_gbs_max"] for row in rows} == {
        "h100-a": 470.05, "h100-b": 465.35, "h100-c": 474.75, "h100-d": 472.40}  # in place beats out of place at 1G


def test_csv_and_json_hold_the_same_rows(report_db):
    rows = results(report_db, "--include-cpu")
    proc = wirewise("results", "--include-cpu", "--csv", "--db", report_db, check=True)
    read = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert len(read) == len(rows) > 20
    for parsed, row in zip(read, rows):
        assert {k: v for k, v in parsed.items() if v != ""} == {k: str(v) for k, v in row.items() if v is not None}
        for key, value in row.items():
            if isinstance(value, float):
                assert float(parsed[key]) == value


def test_the_table_names_each_case(report_db):
    out = wirewise("results", "--source", "nccl-tests", "--bytes", "1G", "--db", report_db, check=True).stdout
    assert "collective: 8 results" in out and "1 x 8" in out and "nccl-tests" in out and "[464.97-474.37]" in out


@pytest.mark.parametrize(("args", "message"), [
    (("--campaign", "nope"), "--campaign 'nope': no results or campaign of that name"),
    (("--fabric", "nvlink"), "--fabric 'nvlink' is ambiguous: nvlink-all-to-all, nvlink-groups, nvlink-partial"),
    (("--fingerprint", "zz"), "--fingerprint 'zz': nothing stored starts with that"),
    (("--since", "yesterday"), "--since 'yesterday': give a date"),
    (("--bytes", "lots"), "--bytes 'lots'"),
    (("--workload", "inference"), "--workload 'inference': choose one of collective, train"),
    (("--group-by", "colour"), "--group-by 'colour': choose fields among"),
])
def test_bad_input_is_one_line_and_exit_2(report_db, args, message):
    proc = wirewise("results", *args, "--db", report_db)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"wirewise: error: {message}") and proc.stderr.count("\n") == 1


def test_several_campaigns_are_looked_up_in_one_read(report_db, monkeypatch):
    """`--campaign` repeated: the names are looked up together, once (a spy on the store's real
    lookup, in process), and the first unknown one is named."""
    from wirewise.errors import UserError
    from wirewise.orchestrator.results import filters
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.results import Filters

    lookups = []
    real = filters.campaign_names
    monkeypatch.setattr(filters, "campaign_names", lambda store, wanted: lookups.append(list(wanted)) or real(store, wanted))
    with pytest.raises(UserError, match="--campaign 'nope-1': no results or campaign of that name"):
        filters.resolve(Store(report_db), Filters(campaigns=("camp-a", "nope-1", "nope-2")))
    assert lookups == [["camp-a", "nope-1", "nope-2"]]


def test_postgresql_gives_the_same_aggregates(report_db, pg_url, tmp_path):
    """JSON and time columns come back decoded by psycopg but as text from SQLite: one answer."""
    for node, factor in (("h100-a", 1.0), ("h100-b", 0.99)):
        import_log(tmp_path, pg_url, node, factor)
    query = ("--source", "nccl-tests", "--geometry", "packed", "--group-by", "node,bytes,in_place")
    on_pg = results(pg_url, *query)
    assert len(on_pg) == 40  # 2 nodes x 10 sizes x out of place, in place
    assert on_pg == [row for row in results(report_db, *query) if row["node"] in ("h100-a", "h100-b")]
    # The default grouping is the case, by its stored key on both databases.
    one_node = ("--node", "h100-a")
    assert results(pg_url, *one_node) == results(report_db, *one_node) != []


def test_results_and_the_reports_facts_count_the_gpus_of_an_unknown_gpu_count_alike(tmp_path):
    """A run whose GPU count went unsaid (gpu_count NULL) but whose rank count is known
    (world_size 8: a record file may say so, contract.record allows it; set here in the real
    database, on the H100 log imported for two nodes, and its case derived again by the
    store's own refill, as storing such a record does). `results` counts it as 8 ranks (the
    case's), and so must the result rows that doctor and `baseline export` judge by."""
    import sqlite3

    import sqlalchemy as sa

    from wirewise.orchestrator.store.cases import refill_cases

    path = tmp_path / "wirewise.db"
    url = f"sqlite:///{path}"
    for node in ("h100-a", "h100-b"):
        import_log(tmp_path, url, node, 1.0)
    with sqlite3.connect(path) as db:
        assert db.execute("UPDATE results SET gpu_count = NULL WHERE node = 'h100-b' AND world_size = 8").rowcount > 0
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        refill_cases(conn)
    engine.dispose()
    assert {row["node"] for row in results(url, "--gpus", "8", "--group-by", "node")} == {"h100-a", "h100-b"}
    shown = {(row["ranks"], row["count"]) for row in results(url, "--bytes", "1G", "--group-by", "node,ranks,in_place")
             if not row["in_place"]}
    assert shown == {(8, 1)}
    out = tmp_path / "baselines.json"
    wirewise("baseline", "export", "--out", str(out), "--db", url, check=True)
    baselines = json.loads(out.read_text())["baselines"]
    judged = {(b["case"]["ranks"], b["results"]) for b in baselines if b["case"]["bytes"] == 1 << 30 and not b["case"]["in_place"]}
    pooled = {(row["ranks"], row["count"]) for row in results(url, "--bytes", "1G", "--group-by", "ranks,in_place")
              if not row["in_place"]}
    assert judged == pooled == {(8, 2)}  # a baseline is the node type's: both nodes' results, 8 ranks each


def test_an_80_column_table_holds_every_model_name_whole(tmp_path, db_url):
    """Issue 31: at 80 columns `results` cut model names to 'tiny-...' and headers to 'strat...',
    and piped output ignored COLUMNS (156 wide). Jobs' records of three models (built by the
    job recorder's own code, as tests/launch/test_job_history.py does: no GPU here), stored by
    collect; `results` piped with COLUMNS=80 keeps within 80 columns, every model name and
    heading whole, each aggregated figure's median on its row and its range below it."""
    from wirewise.jobs.history import RankFigures, job_record, write_result

    models = [("tiny-dinov2", "ddp", 9000), ("mistral-1b", "fsdp", 21000), ("mistral-7b", "zero3", 4000),
              ("mistral-7b", "zero3", 4100), ("mistral-7b", "ddp", 3900)]
    for n, (model, strategy, tokens_per_s) in enumerate(models):
        step = 2 * 2048 / tokens_per_s
        ranks = [RankFigures([step, step * 1.01, step * 0.99, step], 2048, 1, int(50e9), "cuda", "nvl1", [g]) for g in (0, 1)]
        record, topo = job_record(ranks, None, model=model, strategy=strategy, micro_batch=1, seq_len=2048)
        write_result(tmp_path / "jobs" / str(n), record, topo)
    wirewise("collect", str(tmp_path / "jobs"), "--db", db_url, check=True)

    table = wirewise("results", "--source", "job", "--include-cpu", "--db", db_url, env={"COLUMNS": "80"}, check=True).stdout
    lines = table.splitlines()
    assert max(len(line) for line in lines) <= 80, table
    named = {line.split()[0] for line in lines if line.split()[:1] in (["tiny-dinov2"], ["mistral-1b"], ["mistral-7b"])}
    assert named == {"tiny-dinov2", "mistral-1b", "mistral-7b"}, table
    [heading] = [line for line in lines if line.startswith("model ")]
    assert heading.split()[:3] == ["model", "strategy", "n"] and "tokens/s" in heading, table
    assert "status ok" in table.split("model ")[0], table  # a status every row shares is in the title
    [aggregated] = [line for line in lines if line.split()[:2] == ["mistral-7b", "zero3"]]
    assert "4,050 ±1%" in aggregated and "[4,000-4,100]" in lines[lines.index(aggregated) + 1], table

    narrow = wirewise("results", "--source", "job", "--include-cpu", "--db", db_url, env={"COLUMNS": "60"}, check=True).stdout
    assert max(map(len, narrow.splitlines())) <= 60 and "tiny-dinov2" in narrow.split(), narrow  # COLUMNS honoured in a pipe
