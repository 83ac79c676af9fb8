"""Which command reads which file (issue 34, the importer's drift): `collect` stores wirewise
result files, a result.json or result records as JSON lines, also found in the folders named
(the project's own tests/fixtures/measured-2xh200 folder among them); `import nccl-tests`
stores nccl-tests logs. Each refuses the other's kind in one line naming the command to use,
exit 2, nothing stored. Real processes, real SQLite files, the project's fixtures."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.cli.test_trust import QUICK, collective, db_rows, one_line_exit_2, result_file
from tests.conftest import FIXTURES, wirewise, wirewise_json

MEASURED = FIXTURES / "measured-2xh200"
LOGS = sorted(p for p in (FIXTURES / "nccl-tests").iterdir() if p.name != "SOURCES") + sorted(MEASURED.glob("nccl-tests-*.txt"))


def _lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_folder_of_json_lines_result_files_is_collected(tmp_path, db_url):
    """The fixture folder as a user has it (its JSON-lines files beside nccl-tests logs and a
    topology), in a tree that also holds a run's progress.jsonl and a JSON-lines training set:
    collect takes every result record of the JSON-lines files and nothing else."""
    folder = tmp_path / "measured"
    shutil.copytree(MEASURED, folder)
    run = folder / "runs" / "abc"
    run.mkdir(parents=True)
    (run / "progress.jsonl").write_text('{"event": "start", "rank": 0}\n{"event": "row", "rank": 0}\n')
    (folder / "train.jsonl").write_text('{"instruction": "say hi", "output": "hi"}\n')
    files = sorted(MEASURED.glob("*.jsonl"))
    done = wirewise_json("collect", str(folder), "--db", db_url)
    ids = {record["record_id"] for path in files for record in _lines(path)}
    assert done["files"] == len(files) == 2
    assert done["records"] == sum(len(_lines(path)) for path in files)
    assert db_rows(db_url, "SELECT count(*) FROM results") == [(len(ids),)]


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name[:40])
def test_collect_names_import_for_an_nccl_tests_log(log, tmp_path, db_url):
    """Every real log of the fixtures, named after a good result file: refused before anything
    is stored, the line naming the command that stores it."""
    good = result_file(tmp_path / "good" / "result.json", collective())
    proc = wirewise("collect", str(good), str(log), "--db", db_url, timeout=QUICK)
    one_line_exit_2(proc, f"{log}: an nccl-tests log, not a wirewise result file: store it with `wirewise import nccl-tests {log}`")
    assert not (tmp_path / "wirewise.db").exists() or db_rows(db_url, "SELECT count(*) FROM results") == [(0,)]


def test_a_folder_of_nccl_tests_logs_names_import(tmp_path, db_url):
    """A folder of real logs (and a note about them that names nccl-tests) holds no result
    file: refused in one line that names the logs and the command that stores each."""
    folder = tmp_path / "logs"
    folder.mkdir()
    for name in ("nccl-all_gather-a100-sxm4-2node-8gpu-polaris-zero-size-rows.txt", "nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt"):
        shutil.copy(FIXTURES / "nccl-tests" / name, folder / name)
    shutil.copy(FIXTURES / "nccl-tests" / "SOURCES", folder / "SOURCES")
    proc = wirewise("collect", str(folder), "--db", db_url, timeout=QUICK)
    one_line_exit_2(proc, f"{folder}: no wirewise result file under it, but nccl-tests logs (nccl-all_gather-a100-sxm4-2node-8gpu-"
                          "polaris-zero-size-rows.txt, nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt): store each with "
                          f"`wirewise import nccl-tests {folder}/nccl-all_gather-a100")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("nothing measured yet\n")
    assert wirewise_json("collect", str(empty), "--db", db_url)["files"] == 0  # nothing there, nothing wrong


def test_collect_reads_a_log_saved_as_utf16_as_a_log(tmp_path, db_url):
    """PowerShell's `>` saves UTF-16 with a byte-order mark: still an nccl-tests log, not 'not JSON'."""
    log = tmp_path / "all_reduce.log"
    log.write_text((FIXTURES / "nccl-tests" / "nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt").read_text(), encoding="utf-16")
    one_line_exit_2(wirewise("collect", str(log), "--db", db_url, timeout=QUICK), "store it with `wirewise import nccl-tests")


def test_collect_tells_a_log_whose_rows_come_after_megabytes_of_nccl_info(tmp_path, db_url):
    """NCCL_DEBUG=INFO on a large job: the settings line, then 3 MB of INFO lines, then the rows."""
    head, rows = (FIXTURES / "nccl-tests" / "nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt").read_text().split("#       size", 1)
    log = tmp_path / "big-job.log"
    log.write_text(head + "node-17:2241:2263 [3] NCCL INFO Channel 07/0 : 3[3] -> 4[4] via P2P/CUMEM/read\n" * 40_000 + "#       size" + rows)
    one_line_exit_2(wirewise("collect", str(log), "--db", db_url, timeout=QUICK), f"{log}: an nccl-tests log, not a wirewise result file")


def test_collect_refuses_other_text_before_storing(tmp_path, db_url):
    good = result_file(tmp_path / "good" / "result.json", collective())
    topo = MEASURED / "topo.txt"
    proc = wirewise("collect", str(good), str(topo), "--db", db_url, timeout=QUICK)
    one_line_exit_2(proc, f"{topo}: not a wirewise result file (not JSON); give the result.json")
    assert not (tmp_path / "wirewise.db").exists() or db_rows(db_url, "SELECT count(*) FROM results") == [(0,)]


@pytest.mark.parametrize("name", ["wirewise-results.jsonl", "result.json"])
def test_import_names_collect_for_a_result_file(name, tmp_path, db_url):
    path = tmp_path / name
    if name == "result.json":
        result_file(path, collective())
    else:
        shutil.copy(MEASURED / name, path)
    proc = wirewise("import", "nccl-tests", str(path), "--db", db_url, timeout=QUICK)
    one_line_exit_2(proc, f"{name}: wirewise result records (JSON), not an nccl-tests log: store them with `wirewise collect {path}`")


def test_import_says_no_rows_of_other_json(tmp_path, db_url):
    """JSON that is no result file (a topology's expected values) is no log either: the reader's own message."""
    proc = wirewise("import", "nccl-tests", str(FIXTURES / "topo" / "expected.json"), "--db", db_url, timeout=QUICK)
    one_line_exit_2(proc, "expected.json: no nccl-tests result rows found (is this the stdout of an *_perf run?)")
