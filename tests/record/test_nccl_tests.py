"""nccl-tests logs (newer 2.17 format, older format with zero-size rows) into result records."""

from __future__ import annotations

import json
import shutil

import pytest
from sqlalchemy import func, select

from wirewise.errors import UserError
from wirewise.orchestrator.record.nccl_tests import log_records, parse_log
from tests.conftest import FIXTURES, wirewise, wirewise_json

LOGS = FIXTURES / "nccl-tests"
NEW_LOG = LOGS / "nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt"
OLD_LOG = LOGS / "nccl-all_gather-a100-sxm4-2node-8gpu-polaris-zero-size-rows.txt"
POLARIS_TOPO = FIXTURES / "topo" / "a100-sxm-4gpu-hgx-nv4-polaris-2nic-mangled-header.txt"


def _records(path, **kw):
    return log_records(path.read_text(), path.name, **kw)


def test_newer_log_with_version_and_op_lines():
    records = _records(NEW_LOG)
    assert len(records) == 20  # 10 sizes, out of place and in place
    assert {r.op for r in records} == {"all_reduce"} and {r.source for r in records} == {"nccl-tests"}
    peak = max(records, key=lambda r: r.busbw_gbs)
    assert (peak.busbw_gbs, peak.bytes, peak.in_place, peak.algbw_gbs, peak.time_us) == (482.27, 17179869184, False, 275.58, 62340.7)
    first = records[0]
    assert (first.bytes, first.count, first.dtype, first.wrong, first.world_size, first.gpu_count) == (33554432, 4194304, "float64", 0, 8, 8)
    assert (first.node, first.gpus) == ("cnode3-002", list(range(8)))
    assert first.versions == {"nccl-tests": "2.17.8", "nccl": "2.29.2"}
    assert first.extra["avg_busbw_gbs"] == 437.957 and first.extra["redop"] == "sum" and first.extra["root"] == -1
    assert first.extra["gpu_names"] == ["NVIDIA H100 80GB HBM3"]
    assert first.params["iters"] == 20 and first.params["warmup"] == 5 and first.params["test"] == "all_reduce_perf"
    assert [r.in_place for r in records[:2]] == [False, True]


def test_older_log_takes_the_op_from_its_name_and_skips_zero_size_rows():
    [section] = parse_log(OLD_LOG.read_text())
    assert len(section.rows) == 29 and sum(row.size == 0 for row in section.rows) == 5
    records = _records(OLD_LOG)
    assert len(records) == 48  # 24 non-empty sizes x (out of place, in place)
    assert {r.op for r in records} == {"all_gather"} and min(r.bytes for r in records) == 128
    peak = max(records, key=lambda r: r.busbw_gbs)
    assert (peak.busbw_gbs, peak.bytes, peak.in_place) == (3.36, 268435456, False)
    last = records[-1]
    assert (last.bytes, last.count, last.dtype, last.time_us, last.in_place) == (1073741824, 33554432, "float32", 287875.0, True)
    # Two nodes of four GPUs: the record is the first node's, the log's hosts are kept.
    assert (last.node, last.gpus, last.world_size) == ("x3006c0s13b1n0", [0, 1, 2, 3], 8)
    assert last.extra["hosts"] == ["x3006c0s13b1n0", "x3006c0s19b0n0"] and last.extra["avg_busbw_gbs"] == 1.16549
    assert last.extra["redop"] == "none"


def test_op_must_be_known_and_fit_the_redop_column():
    text = OLD_LOG.read_text()
    with pytest.raises(UserError, match="give --op"):
        log_records(text, "run.log")
    assert {r.op for r in log_records(text, "run.log", op="all_gather")} == {"all_gather"}
    with pytest.raises(UserError, match="redop 'none'"):
        log_records(text, "run.log", op="all_reduce")
    with pytest.raises(UserError, match="says it ran all_reduce_perf"):
        _records(NEW_LOG, op="all_gather")


def test_concatenated_runs_are_separate_sections():
    text = NEW_LOG.read_text() + "\n" + OLD_LOG.read_text()
    sections = parse_log(text)
    assert [len(s.rows) for s in sections] == [10, 29]
    assert [s.average_busbw for s in sections] == [437.957, 1.16549]


def test_rows_ignore_noise_lines():
    noise = "cnode:1:1 [0] NCCL INFO Bootstrap : Using eth0\nNCCL version 2.18.5+cuda12.2\n"
    text = NEW_LOG.read_text().replace("#\n# Reducing", noise + "#\n# Reducing")
    assert noise in text
    assert len(log_records(text, NEW_LOG.name)) == 20


def test_rows_without_a_wrong_count():
    """Runs without -c print N/A; old nccl-tests printed the largest error (a float) instead."""
    line = "    33554432       4194304    double     sum      -1   182.87  183.49  321.10     N/A   182.88  183.48  321.08  0e+00"
    [section] = parse_log(line)
    assert (section.rows[0].out_of_place.wrong, section.rows[0].in_place.wrong) == (None, None)
    assert section.rows[0].in_place.busbw_gbs == 321.08


def test_import_is_idempotent_and_fingerprinted(tmp_path, db_url):
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.orm import ResultRow
    from wirewise.topology import read_topology

    first = wirewise_json("import", "nccl-tests", str(OLD_LOG), "--topology-file", str(POLARIS_TOPO), "--db", db_url)
    again = wirewise_json("import", "nccl-tests", str(OLD_LOG), "--topology-file", str(POLARIS_TOPO), "--db", db_url)
    assert (first["rows"], first["new"], again["new"]) == (48, 48, 0)
    [section] = first["sections"]
    assert (section["op"], section["ranks"], section["peak_busbw_gbs"], section["peak_bytes"]) == ("all_gather", 8, 3.36, 268435456)

    fingerprint = read_topology(POLARIS_TOPO).fingerprint
    assert first["fingerprint"] == fingerprint
    with Store(db_url).session() as session:
        count, fingerprints, sources = session.execute(
            select(func.count(), func.group_concat(ResultRow.fingerprint.distinct()), func.group_concat(ResultRow.source.distinct()))
        ).one()
    assert (count, fingerprints, sources) == (48, fingerprint, "nccl-tests")

    human = wirewise("import", "nccl-tests", str(NEW_LOG), "--db", db_url, check=True)
    assert "stored 20 new of 20 rows" in human.stdout and "peak busbw 482.27 GB/s" in human.stdout


def test_import_bad_input_is_one_line_and_exit_2(tmp_path, db_url):
    renamed = tmp_path / "run.log"
    shutil.copy(OLD_LOG, renamed)
    cases = [
        ([str(tmp_path / "missing.txt")], "no such file"),
        ([str(renamed)], "give --op"),
        ([str(NEW_LOG), "--topology-file", str(POLARIS_TOPO)], "uses GPU 7 but"),
    ]
    for args, message in cases:
        proc = wirewise("import", "nccl-tests", *args, "--db", db_url)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr


# A real log from 2x H200 (NV18) run with NCCL_P2P_DISABLE=1, which the log itself does not show.
P2P_OFF_LOG = FIXTURES / "measured-2xh200" / "nccl-tests-all_reduce-pcie.txt"
H200_TOPO = FIXTURES / "measured-2xh200" / "topo.txt"


def test_import_records_transport_and_environment_like_a_native_run(db_url):
    """--transport pcie and --env land where `bench collectives --transport pcie` puts them
    (params.transport, env.NCCL_P2P_DISABLE), so one query by transport finds both kinds of row."""
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.orm import ResultRow

    summary = wirewise_json("import", "nccl-tests", str(P2P_OFF_LOG), "--transport", "pcie", "--env", "NCCL_PROTO=Simple",
                            "--env", "NCCL_ALGO=Ring", "--topology-file", str(H200_TOPO), "--db", db_url)
    assert summary["new"] == 22  # 11 sizes x (out of place, in place)
    [section] = summary["sections"]
    assert (section["transport"], section["cuda_graph"]) == ("pcie", False)
    assert section["env"] == {"NCCL_ALGO": "Ring", "NCCL_P2P_DISABLE": "1", "NCCL_PROTO": "Simple"}
    wirewise("import", "nccl-tests", str(NEW_LOG), "--db", db_url, check=True)  # an NVLS run, transport default
    with Store(db_url).session() as session:
        pcie = session.execute(
            select(ResultRow.bytes, ResultRow.busbw_gbs, ResultRow.env).where(ResultRow.params["transport"].as_string() == "pcie")
        ).all()
        default = session.scalar(select(func.count()).where(ResultRow.params["transport"].as_string() == "default"))
    assert len(pcie) == 22 and default == 20
    assert all(env["NCCL_P2P_DISABLE"] == "1" for _, _, env in pcie)
    # the log's last row, in place: 1 GiB at 27.98 GB/s busbw through host memory (NVLink: ~324)
    assert (1073741824, 27.98) in {(b, busbw) for b, busbw, _ in pcie}


def test_a_graph_run_and_nccl_info_environment_lines_are_read_from_the_log(tmp_path):
    """`graph: 1` in the header is nccl-tests' -G; NCCL_DEBUG=INFO lines name the variables
    NCCL took from the environment (the line below in NCCL's own format)."""
    text = P2P_OFF_LOG.read_text().replace("graph: 0", "graph: 1")
    text = text.replace("#\n# Using devices", "vm:1450:1450 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1.\n#\n# Using devices", 1)
    log = tmp_path / "all_reduce_perf-G.txt"
    log.write_text(text)
    [section] = parse_log(text)
    assert section.env == {"NCCL_P2P_DISABLE": "1"}
    from wirewise.orchestrator.record.nccl_tests import HowItRan

    records = log_records(text, log.name, how=HowItRan("pcie"))
    assert {(r.params["cuda_graph"], r.params["graph"], r.params["transport"]) for r in records} == {(True, 1, "pcie")}
    # issue 29: the log shows P2P off, so without --transport the run is stored as pcie, never as the default
    assert {r.params["transport"] for r in log_records(text, log.name)} == {"pcie"}
    with pytest.raises(UserError, match="NCCL_P2P_DISABLE=1 is what --transport pcie sets: give --transport pcie, not default"):
        log_records(text, log.name, how=HowItRan("default"))  # said so, against the log: refused
    assert {r.params["cuda_graph"] for r in _records(P2P_OFF_LOG)} == {False}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--transport", "nvlink"], "--transport 'nvlink': choose one of default, pcie"),
        (["--env", "NCCL_ALGO"], "--env 'NCCL_ALGO': give KEY=VALUE"),
        (["--env", "HOME=/root"], "--env 'HOME=/root': a run records only variables beginning NCCL_, "),
        (["--env", "NCCL_P2P_DISABLE=1"], "NCCL_P2P_DISABLE=1 is what --transport pcie sets"),
        (["--transport", "pcie", "--env", "NCCL_P2P_DISABLE=0"], "--transport pcie sets NCCL_P2P_DISABLE=1, but NCCL_P2P_DISABLE=0 was given"),
    ],
)
def test_import_how_it_ran_bad_input_is_one_line_and_exit_2(args, message, tmp_path):
    db = tmp_path / "w.db"
    proc = wirewise("import", "nccl-tests", str(P2P_OFF_LOG), *args, "--db", f"sqlite:///{db}")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
    assert not db.exists()


def _cut_before_last_column(text: str, size: int) -> str:
    """The log as a crash leaves it: the row of `size` without its last (#wrong) column, nothing after."""
    head, start, rest = text.partition(f"\n  {size:>10d}")
    return head + start + rest.split("\n")[0].rsplit(None, 1)[0] + "\n"


def test_a_cut_row_is_skipped_with_a_warning_naming_its_line(tmp_path, db_url):
    """Issue 10 item 1: a log cut before its last #wrong column stored the 512 MiB row with
    time_us=-1.0 and algbw=2115 (its columns shifted) and exited 0."""
    cut = tmp_path / "nccl-all_reduce-cut.txt"
    cut.write_text(_cut_before_last_column(NEW_LOG.read_text(), 536870912))
    proc = wirewise("import", "nccl-tests", str(cut), "--db", db_url, "--json", check=True)
    summary = json.loads(proc.stdout)
    assert summary["rows"] == 8  # 4 whole sizes x 2; the cut 512 MiB row is not stored
    assert proc.stderr.count("\n") == 1 and "warning" in proc.stderr and "line 24" in proc.stderr
    assert "cut row" in proc.stderr and summary["skipped"] == [proc.stderr.split("warning: ")[1].split("; not")[0]]
    stored = _stored(db_url)
    assert all(r.time_us > 0 and r.bytes != 536870912 for r in stored)


def test_nan_inf_and_negative_figures_are_not_stored(tmp_path, db_url):
    text = NEW_LOG.read_text()
    bad = (text.replace("182.87  183.49  321.10", "   nan  183.49  321.10")
               .replace("313.66  213.95", "313.66   -2.00")
               .replace("564.78  237.64  415.88", "564.78  237.64     inf"))
    log = tmp_path / "nccl-all_reduce.txt"
    log.write_text(bad)
    proc = wirewise("import", "nccl-tests", str(log), "--db", db_url, "--json", check=True)
    assert json.loads(proc.stdout)["rows"] == 14  # 7 good sizes x 2
    assert proc.stderr.count("warning") == 3 and "time_us nan" in proc.stderr and "busbw_gbs inf" in proc.stderr


def test_an_op_that_is_not_an_op_is_refused(tmp_path, db_url):
    proc = wirewise("import", "nccl-tests", str(OLD_LOG), "--op", "all_redux", "--db", db_url)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--op 'all_redux'" in proc.stderr


def test_record_ids_come_from_the_measurement_not_the_bytes(tmp_path, db_url):
    """Issue 10 item 2: the same log with one more trailing newline, or a truncated copy,
    added all its rows again."""
    text = NEW_LOG.read_text()
    newline = tmp_path / "nccl-all_reduce-a.txt"
    newline.write_text(text + "\n")
    truncated = tmp_path / "nccl-all_reduce-b.txt"
    truncated.write_text(text[: text.index("  1073741824")])  # the first five sizes
    crlf = tmp_path / "nccl-all_reduce-c.txt"
    crlf.write_bytes(text.replace("\n", "\r\n").encode())
    first = wirewise_json("import", "nccl-tests", str(NEW_LOG), "--db", db_url)
    assert first["new"] == 20
    for copy in (newline, truncated, crlf):
        again = wirewise_json("import", "nccl-tests", str(copy), "--db", db_url)
        assert again["new"] == 0, copy.name
    assert len(_stored(db_url)) == 20
    # Another run (other pids) with the same figures is another measurement.
    other_run = tmp_path / "nccl-all_reduce-d.txt"
    other_run.write_text(text.replace("Pid 4180122", "Pid 4180999"))
    assert wirewise_json("import", "nccl-tests", str(other_run), "--db", db_url)["new"] == 20


def _stored(db_url):
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.orm import ResultRow

    with Store(db_url).session() as session:
        return session.scalars(select(ResultRow)).all()


def test_a_failed_import_stores_neither_the_node_nor_its_wiring(db_url):
    """Issue 10 item 4: the node and topology were committed before the records, so an
    import failing at the records left a node with no results."""
    import sqlite3

    from wirewise.orchestrator.store import Store

    Store(db_url)  # the schema
    path = db_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:  # a real failure at the records' INSERT, after the node's
        conn.execute("CREATE TRIGGER full BEFORE INSERT ON results BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    proc = wirewise("import", "nccl-tests", str(OLD_LOG), "--topology-file", str(POLARIS_TOPO), "--db", db_url)
    assert proc.returncode != 0 and "disk full" in proc.stderr
    with sqlite3.connect(path) as conn:
        counts = [conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in ("nodes", "topologies", "node_topologies", "results")]
    assert counts == [0, 0, 0, 0]
