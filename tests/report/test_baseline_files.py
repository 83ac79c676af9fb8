"""Baselines files as people bring them (issue 29), as processes on a real database, SQLite and
PostgreSQL: a file with any value of the wrong type or range stores nothing and says which;
rows an older wirewise stored unchecked never stop export or doctor again; export writes strict
JSON and never replaces what is not a regular file (a device, a FIFO), and streams to stdout."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.cli.hostile_pass import BASELINE
from tests.conftest import wirewise, wirewise_json
from tests.report.conftest import import_log
from wirewise.orchestrator.health.baseline import VERSION

GOOD = {**BASELINE, "fingerprint": "a" * 64}  # the hostile pass's sound entry, on a wiring of its own


def baselines_file(path: Path, *entries: dict) -> Path:
    path.write_text(json.dumps({"format": "wirewise-baselines", "version": VERSION, "baselines": list(entries)}))
    return path


def entry(**changes) -> dict:
    found = json.loads(json.dumps(GOOD))
    for name, value in changes.items():
        where = found["case"] if name in found["case"] else found
        where[name] = value
    return found


def stored_baselines(url: str) -> int:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table("baselines"):
                return 0
            return conn.execute(sa.text("SELECT count(*) FROM baselines")).scalar()
    finally:
        engine.dispose()


BAD = {  # what the file holds -> the words that name it
    "results 2^63 (past SQLite's integer)": (entry(results=2**63), "baselines[1].results"),
    "results 2^31 (past PostgreSQL's integer)": (entry(results=2**31), "baselines[1].results"),
    "ranks as a list": (entry(ranks=[0, 1]), "baselines[1].case.ranks"),
    "bytes as text": (entry(bytes="1K"), "baselines[1].case.bytes"),
    "bytes 1.5": (entry(bytes=1.5), "baselines[1].case.bytes"),
    "in_place as a number": (entry(in_place=3), "baselines[1].case.in_place"),
    "results as text": (entry(results="4"), "baselines[1].results"),
    "median as text": (entry(median="10"), "baselines[1].median"),
    "a case field unknown": ({**GOOD, "case": {**GOOD["case"], "colour": "red"}}, "baselines[1].case.colour"),
    "a case field missing": ({**GOOD, "case": {k: v for k, v in GOOD["case"].items() if k != "op"}}, "baselines[1].case.op"),
    "a source counted as text": (entry(sources={"wirewise": "4"}), "baselines[1].sources"),
    "the metric of the other workload": (entry(metric="tokens_per_s"), "baselines[1].metric"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_baselines_file_with_one_bad_value_stores_nothing(url, tmp_path, name):
    bad, said = BAD[name]
    path = baselines_file(tmp_path / "b.json", GOOD, bad)
    proc = wirewise("baseline", "import", str(path), "--db", url)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and said in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and stored_baselines(url) == 0


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_baselines_file_with_a_figure_that_is_no_number_stores_nothing(url, tmp_path, token):
    text = json.dumps({"format": "wirewise-baselines", "version": VERSION, "baselines": [GOOD, entry(scaled_mad=12345.5)]})
    path = tmp_path / "b.json"
    path.write_text(text.replace("12345.5", token))
    proc = wirewise("baseline", "import", str(path), "--db", url)
    assert proc.returncode == 2 and "baselines[1].scaled_mad" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert stored_baselines(url) == 0


def test_rows_stored_unchecked_before_are_left_out_with_a_word(url, tmp_path):
    """An older wirewise stored what it was given: a case with its ranks as a list, and (where the
    database keeps it) a NaN median. Export still writes strict JSON of the sound ones, saying
    what it left out; it no longer fails for good."""
    wirewise("baseline", "import", str(baselines_file(tmp_path / "good.json", GOOD)), "--db", url, check=True)
    rows = [{"case": entry(ranks=[0, 1])["case"], "median": 10.0}]
    if not url.startswith("sqlite"):
        rows.append({"case": entry(bytes=2048)["case"], "median": float("nan")})  # SQLite keeps no NaN
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        table = sa.Table("baselines", sa.MetaData(), autoload_with=conn)
        for index, row in enumerate(rows):
            conn.execute(sa.insert(table).values(
                fingerprint=GOOD["fingerprint"], workload="collective", case_key=f"old-{index}", metric="busbw_gbs",
                scaled_mad=1.0, results=4, nodes=2, sources={}, origin="old.json", imported_at=sa.func.now(), **row))
    engine.dispose()
    out = tmp_path / "out.json"
    proc = wirewise("baseline", "export", "--out", str(out), "--db", url)
    assert proc.returncode == 0, proc.stderr
    assert f"ignored {len(rows)} stored baseline(s)" in proc.stderr and "old.json" in proc.stderr
    doc = json.loads(out.read_text(), parse_constant=lambda token: pytest.fail(f"{token} in the export"))
    assert [b["case"] for b in doc["baselines"]] == [GOOD["case"]]


def test_doctor_judges_by_the_sound_baselines_and_says_which_it_ignored(report_db, tmp_path):
    out = tmp_path / "h100.json"
    [fingerprint] = {t["fingerprint"] for t in wirewise_json("topo", "list", "--db", report_db) if t["node"] == "h100-a"}
    wirewise("baseline", "export", "--fingerprint", fingerprint, "--out", str(out), "--db", report_db, check=True)
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    wirewise("baseline", "import", str(out), "--db", fresh, check=True)
    engine = sa.create_engine(fresh)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE baselines SET \"case\" = json_set(\"case\", '$.ranks', json('[0, 1]')), "
                             "case_key = 'old', origin = 'old.json' WHERE id = (SELECT min(id) FROM baselines)"))
    engine.dispose()
    import_log(tmp_path, fresh, "newcomer", 0.5)
    proc = wirewise("doctor", "--node", "newcomer", "--json", "--db", fresh)
    assert proc.returncode == 1, proc.stderr
    found = json.loads(proc.stdout)
    assert found["findings"] and any("ignored 1 stored baseline(s)" in note and "old.json" in note for note in found["notes"])


# -- where export writes ----------------------------------------------------------------------
@pytest.fixture
def exported_db(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'wirewise.db'}"
    wirewise("baseline", "import", str(baselines_file(tmp_path / "good.json", GOOD)), "--db", url, check=True)
    return url


def test_export_streams_into_a_fifo_and_leaves_it_a_fifo(exported_db, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = {}
    reader = threading.Thread(target=lambda: got.update(text=fifo.read_text()), daemon=True)  # a FIFO renamed over: never opened
    reader.start()
    proc = wirewise("baseline", "export", "--out", str(fifo), "--db", exported_db, timeout=60)
    reader.join(60)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and json.loads(got["text"])["baselines"][0]["case"] == GOOD["case"]
    alone = wirewise("baseline", "export", "--out", str(fifo), "--db", exported_db, timeout=60)
    assert alone.returncode == 2 and "nobody reads" in alone.stderr and stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node takes root")
def test_export_writes_through_a_device_and_leaves_it_a_device(exported_db, tmp_path):
    """A null device of our own in tmp_path (never the system's /dev/null): the export goes
    into it, and it is still the device afterwards, not a regular file renamed over it."""
    null = tmp_path / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    proc = wirewise("baseline", "export", "--out", str(null), "--db", exported_db)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(null.lstat().st_mode) and null.lstat().st_rdev == os.makedev(1, 3)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".null")] == []


def test_export_to_stdout_a_folder_refused_a_link_followed(exported_db, tmp_path):
    proc = wirewise("baseline", "export", "--out", "-", "--db", exported_db)
    assert proc.returncode == 0 and json.loads(proc.stdout)["baselines"][0]["median"] == 10.0, proc.stderr
    folder = wirewise("baseline", "export", "--out", str(tmp_path), "--db", exported_db)
    assert folder.returncode == 2 and "is a folder" in folder.stderr and folder.stderr.count("\n") == 1
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    wirewise("baseline", "export", "--out", str(link), "--db", exported_db, check=True)
    assert link.is_symlink() and json.loads(target.read_text())["baselines"]


def test_a_version_2_file_is_read_its_spread_taken_as_scaled_mad(url, tmp_path):
    """Version 2 files named the robust deviation `spread`; version 3 `scaled_mad` (`spread` is a
    relative range in results, compare and fleet pairs). A version 2 file imports, its figure
    kept under the new name; a version 2 entry that holds both names is refused (one figure);
    a version 1 file is refused, naming the versions read."""
    old = {k: v for k, v in GOOD.items() if k != "scaled_mad"} | {"spread": 0.5}
    old["case"] = {k: v for k, v in old["case"].items() if k != "scope"}  # version 2 had none
    path = tmp_path / "v2.json"
    path.write_text(json.dumps({"format": "wirewise-baselines", "version": 2, "baselines": [old]}))
    wirewise("baseline", "import", str(path), "--db", url, check=True)
    out = tmp_path / "out.json"
    wirewise("baseline", "export", "--out", str(out), "--db", url, check=True)
    doc = json.loads(out.read_text())
    assert doc["version"] == VERSION == 4 and [b["scaled_mad"] for b in doc["baselines"]] == [0.5]
    assert [b["case"] for b in doc["baselines"]] == [GOOD["case"]]  # one node: scope `node`
    pair = {**GOOD, "fingerprint": "b" * 64, "case": {**old["case"], "node_count": 2, "ranks_per_node": 1}}
    three = tmp_path / "v3.json"
    three.write_text(json.dumps({"format": "wirewise-baselines", "version": 3, "baselines": [pair]}))
    wirewise("baseline", "import", str(three), "--db", url, check=True)
    wirewise("baseline", "export", "--out", str(out), "--db", url, check=True)
    [read] = [b for b in json.loads(out.read_text())["baselines"] if b["fingerprint"] == "b" * 64]
    assert read["case"]["scope"] is None  # two nodes: the file did not say over which fabric
    both = tmp_path / "both.json"
    both.write_text(json.dumps({"format": "wirewise-baselines", "version": 2, "baselines": [{**old, "scaled_mad": 0.5}]}))
    proc = wirewise("baseline", "import", str(both), "--db", url)
    assert proc.returncode == 2 and "baselines[0].spread" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    one = tmp_path / "v1.json"
    one.write_text(json.dumps({"format": "wirewise-baselines", "version": 1, "baselines": [old]}))
    proc = wirewise("baseline", "import", str(one), "--db", url)
    assert proc.returncode == 2 and "reads versions 2, 3, 4" in proc.stderr, proc.stderr
