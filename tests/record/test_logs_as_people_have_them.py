"""Issue 29, "Logs as people have them": nccl-tests and rccl-tests logs in the encodings they
are saved in, several runs to an excerpt, runs interleaved, rank lines without GPU names, the
environment on a run's own command line, options that name the run they set, rccl versions,
a 16 GiB row cut by `mpirun --tag-output`. Imported by the console script into a real SQLite
file. Expected figures are read by hand from the fixture files (tests/fixtures/nccl-tests/SOURCES)."""

from __future__ import annotations

import re

from sqlalchemy import select

from tests.conftest import FIXTURES, wirewise, wirewise_json

LOGS = FIXTURES / "nccl-tests"
H100 = LOGS / "nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt"
SENDRECV = LOGS / "moc-h100-2node-8gpu-sendrecv_roce_4gpu.log"
RCCL = LOGS / "hisohara-rccl-tests-mi300x-mi355x-no-gpu-names-headed-excerpts-readme.md"
PER_RUN_ENV = LOGS / "eugenesiow-a40-a100-h100-per-run-env-p2p-disabled-readme.md"


def _import(path, db_url, *args):
    return wirewise_json("import", "nccl-tests", str(path), *args, "--db", db_url)


def _refused(path, db_url, *args) -> str:
    proc = wirewise("import", "nccl-tests", str(path), *args, "--db", db_url)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and proc.stderr.startswith("wirewise: error: "), proc.stderr
    return proc.stderr


def _stored(db_url, **where):
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.orm import ResultRow

    query = select(ResultRow).where(*(getattr(ResultRow, k) == v for k, v in where.items()))
    with Store(db_url).session() as session:
        return session.scalars(query).all()


def _ids(db_url) -> set[str]:
    return {row.record_id for row in _stored(db_url, source="nccl-tests")}


def test_a_log_saved_with_a_byte_order_mark_or_in_utf16_is_the_same_log(tmp_path, db_url):
    """A UTF-8 BOM made the first line `\\ufeff# nccl-tests version ...`: another identity, every
    case stored twice; UTF-16 (PowerShell's `>`) was refused as "no result rows". Each copy alone
    gives the plain copy's record ids, and after the plain copy adds nothing."""
    text = H100.read_text()
    copies = {
        "bom.txt": b"\xef\xbb\xbf" + text.encode(),
        "powershell.txt": text.replace("\n", "\r\n").encode("utf-16"),  # BOM, little-endian, CRLF
        "utf16be-no-bom.txt": text.encode("utf-16-be"),
        "utf32.txt": text.encode("utf-32"),
    }
    assert _import(H100, db_url)["new"] == 20
    plain = _ids(db_url)
    for name, data in copies.items():
        path = tmp_path / f"all_reduce-{name}"
        path.write_bytes(data)
        assert _import(path, db_url)["new"] == 0, name
        alone = f"sqlite:///{tmp_path / (name + '.db')}"
        summary = _import(path, alone)
        assert (summary["new"], summary["sections"][0]["ranks"], summary["sections"][0]["nccl_tests"]) == (20, 8, "2.17.8"), name
        assert _ids(alone) == plain, name


def test_latin1_bytes_and_a_line_too_long_to_be_a_log_line_lose_only_themselves(tmp_path, db_url):
    """A host name written in Latin-1 (not UTF-8) is read as Latin-1, the rest as UTF-8; a 2 MiB
    line without a newline (a binary blob pasted in) is skipped, named, and the run still read."""
    text = H100.read_text()
    host = re.search(r"Pid\s+\d+ on\s+(\S+)", text).group(1)
    data = text.encode().replace(host.encode(), "nöde-ü1".encode("latin-1"))
    data = data.replace(b"# Using devices", b"x" * (2 * 1024 * 1024) + b"\n# Using devices", 1)
    path = tmp_path / "all_reduce_perf.log"
    path.write_bytes(data)
    proc = wirewise("import", "nccl-tests", str(path), "--json", "--db", db_url)
    assert proc.returncode == 0, proc.stderr
    assert "longer than 1,048,576 characters" in proc.stderr
    [run] = __import__("json").loads(proc.stdout)["sections"]
    assert (run["hosts"], run["ranks"], run["rows"]) == (["nöde-ü1"], 8, 20)


def test_two_runs_interleaved_in_one_file_are_refused_not_stored_as_one(tmp_path, db_url):
    """Two jobs writing one file at once: stored as one `ok` run under the first host, every size
    twice. Here the 8-GPU log and a copy of it from another host, line by line and in blocks (each
    run's preamble and rank lines, then both headers, then rows taking turns): nothing can say
    which row is whose, so the file is refused (nothing stored) and the message says why."""
    first = H100.read_text().splitlines()
    second = [line.replace(" on ", " on other-") for line in first]
    second = [re.sub(r"Pid\s+(\d+)", lambda m: f"Pid {int(m.group(1)) + 7}", line) for line in second]
    by_line = [line for pair in zip(first, second) for line in pair]
    header = next(i for i, line in enumerate(first) if line.lstrip("#").split()[:2] == ["size", "count"])
    rows = [i for i, line in enumerate(first) if line.split()[:1] and line.split()[0].isdigit()]
    in_blocks = first[:header] + second[:header] + [x for i in rows for x in (first[i], second[i])] + first[rows[-1] + 1:]
    for name, lines in (("by-line", by_line), ("in-blocks", in_blocks)):
        path = tmp_path / f"all_reduce-{name}.log"
        path.write_text("\n".join(lines) + "\n")
        message = _refused(path, db_url)
        assert "holds the lines of two runs written at once" in message and "save each run's output" in message, name
    assert _stored(db_url) == []


def test_rccl_tests_runs_rank_lines_without_gpu_names_and_headed_excerpts(db_url):
    """Hand-read (hisohara README): line 42 an 8 x MI300X run (Rank 0-7, one host), line 121 a
    16-rank run on gpu-53 and gpu-56 after `RCCL version : 2.22.3-HEAD:7d8d67c`, its 16 GiB row
    357.46 GB/s out of place; then `egrep` excerpts of four runs headed `====== N-node ======`
    with no header of their own (three rows each: 4, 8, 16 GiB), then line 347 a 16-rank MI355X
    run whose rank lines end at the bus id (`device  0 [0000:75:00]`), RCCL 2.26.6-HEAD:6ade506."""
    summary = _import(RCCL, db_url)
    runs = {run["line"]: run for run in summary["sections"]}
    assert sorted(runs) == [42, 121, 250, 254, 258, 262, 347]
    assert {run["op"] for run in runs.values()} == {"all_reduce"}
    assert (runs[42]["ranks"], len(runs[42]["hosts"]), runs[42]["sizes"]) == (8, 1, 31)
    assert (runs[121]["ranks"], runs[121]["hosts"], runs[121]["largest_bytes"]) == (16, ["gpu-53", "gpu-56"], 17179869184)
    assert runs[121]["versions"] == {"rccl-tests": "develop:448c4c7", "rccl": "2.22.3-HEAD:7d8d67c"}
    assert (runs[347]["ranks"], runs[347]["hosts"], runs[347]["sizes"]) == (16, ["mi355-gpu-23", "mi355-gpu-24"], 31)
    assert runs[347]["versions"]["rccl"] == "2.26.6-HEAD:6ade506"
    excerpts = [runs[line] for line in (250, 254, 258, 262)]
    assert [(r["sizes"], r["ranks"], r["largest_bytes"], r["peak_busbw_gbs"]) for r in excerpts] == [
        (3, None, 17179869184, 319.21), (3, None, 17179869184, 350.24), (3, None, 17179869184, 350.59), (3, None, 17179869184, 350.84)]
    sixteen = {(row.extra["log_line"], row.in_place): row for row in _stored(db_url, bytes=17179869184)}
    assert sixteen[(121, False)].busbw_gbs == 357.46 and sixteen[(121, False)].versions["rccl"] == "2.22.3-HEAD:7d8d67c"
    # four runs whose rank counts are unknown: four identities, never one
    assert len({row.task_id for (line, _), row in sixteen.items() if line in (250, 254, 258, 262)}) == 4
    stored = _stored(db_url, source="nccl-tests")
    assert {(row.extra["backend"], row.extra["device"]) for row in stored} == {("nccl", "cuda")}  # docs/contracts.md
    assert {(row.dtype, row.params["transport"]) for row in stored} == {("float32", "default")}
    assert not any("gpu_names" in row.extra for row in stored if row.extra["log_line"] == 347)
    assert {row.gpu_count for row in stored if row.extra["log_line"] == 347} == {16}


def test_several_runs_of_one_excerpt_split_at_a_blank_line_and_get_their_own_identity(tmp_path, db_url):
    """Rows only, no header of their own: an excerpt of two runs' rows, the sweep starting again
    after a blank line, is two runs, each its own identity (two task ids), not one run with every
    size twice."""
    text = PER_RUN_ENV.read_text().splitlines()
    rows = [line for line in text if re.match(r"^\s+\d+\s+\d+\s+float", line)]
    path = tmp_path / "all_reduce-excerpt.txt"
    path.write_text("\n".join(rows[0:4]) + "\n\n" + "\n".join(rows[4:8]) + "\n")
    runs = _import(path, db_url)["sections"]
    assert [(r["line"], r["sizes"], r["ranks"]) for r in runs] == [(1, 4, None), (6, 4, None)]
    assert len({row.task_id for row in _stored(db_url)}) == 2


def test_the_environment_on_a_runs_own_command_line(db_url):
    """Hand-read (eugenesiow README): `CUDA_VISIBLE_DEVICES=0,1 ./build/all_reduce_perf ... -g 2`
    (NVLinked A40 pair, 47.49 GB/s at 8 GiB), `CUDA_VISIBLE_DEVICES=0,1,6,7 NCCL_P2P_DISABLE=1 ...
    -g 4` (1.35 GB/s at 8 GiB), `CUDA_VISIBLE_DEVICES=1,2 NCCL_P2P_DISABLE=1 ... -g 2`, a DGX A100
    `./build/all_reduce_perf ... -g 4` (234.72 GB/s at 8 GiB) and `NCCL_P2P_DISABLE=1` the same,
    then two H100 runs with no command line, the second with NVLink disabled as its prose says.
    P2P-disabled runs were stored as the default transport on GPUs [0, 1]."""
    runs = _import(PER_RUN_ENV, db_url)["sections"]
    facts = [(r["line"], r["ranks"], r["gpus"], r["transport"], r["env"].get("NCCL_P2P_DISABLE")) for r in runs]
    assert facts == [
        (109, 2, [0, 1], "default", None), (129, 4, [0, 1, 6, 7], "pcie", "1"), (147, 2, [1, 2], "pcie", "1"),
        (197, 4, [0, 1, 2, 3], "default", None), (215, 4, [0, 1, 2, 3], "pcie", "1"),
        (241, None, [], "default", None), (254, None, [], "default", None),
    ]
    big = {(row.extra["log_line"], row.params["transport"]): row.busbw_gbs
           for row in _stored(db_url, bytes=8589934592, in_place=False)}
    assert big[(109, "default")] == 47.49 and big[(129, "pcie")] == 1.35 and big[(197, "default")] == 234.72
    assert {tuple(row.gpus) for row in _stored(db_url) if row.extra["log_line"] == 129} == {(0, 1, 6, 7)}
    assert {(row.op, row.dtype) for row in _stored(db_url)} == {("all_reduce", "float32")}


def test_options_name_the_run_they_set_and_the_tools_hint_works_end_to_end(tmp_path, db_url):
    """`--op` applied to every run, so a file of one run that names its op and one that does not
    could not be imported: the hint `--op OP` then clashed with the other run. Now the refusal
    names the run (`--op LINE:OP`) and following it word for word imports the file; --ranks
    and --transport name runs the same way (the H100 run at line 254 ran with NVLink disabled,
    as its prose says); a LINE that starts no run is refused."""
    text = H100.read_text() + "\n" + "\n".join(
        line for line in SENDRECV.read_text().splitlines() if "sendrecv" not in line) + "\n"
    path = tmp_path / "two-runs.log"
    path.write_text(text)
    proc = wirewise("import", "nccl-tests", str(path), "--json", "--db", db_url)  # the run that says its op is stored
    assert proc.returncode == 0 and proc.stderr.count("\n") == 1, proc.stderr
    hint = re.search(r"give --op (\d+):OP for this run", proc.stderr)
    assert hint and "--op OP for every run" in proc.stderr, proc.stderr
    line = int(hint.group(1))
    _refused(path, db_url, "--op", "sendrecv")  # for every run: it clashes with the run that says all_reduce
    summary = _import(path, db_url, "--op", f"{line}:sendrecv")
    assert [(r["op"], r["line"]) for r in summary["sections"]] == [("all_reduce", 1), ("sendrecv", line)]
    assert summary["new"] == summary["sections"][1]["rows"] > 0  # only the run the hint named was new
    assert "no run of two-runs.log starts at line 3 " in _refused(path, db_url, "--op", f"{line}:sendrecv", "--ranks", "3:8")
    other = f"sqlite:///{tmp_path / 'per-run.db'}"
    runs = _import(PER_RUN_ENV, other, "--transport", "254:pcie", "--ranks", "241:4", "--ranks", "254:4")["sections"]
    assert [(r["line"], r["ranks"], r["ranks_from"], r["transport"]) for r in runs][-2:] == [
        (241, 4, "--ranks", "default"), (254, 4, "--ranks", "pcie")]
    _refused(PER_RUN_ENV, other, "--transport", "129:default")  # its own command line says P2P off


def test_a_16_gib_row_cut_by_tag_output_is_read(tmp_path, db_url):
    """`mpirun --tag-output` forwards what a rank printed as it comes: the 16 GiB row's label
    columns and its figures arrived as two tagged lines, the figures starting with an integer time
    (90115), and the row was dropped as "5 columns where the run prints 13". The hisohara 16-rank
    run, every line tagged, its 16 GiB row cut after the root column."""
    lines = RCCL.read_text().splitlines()[119:186]
    tagged = []
    for line in lines:
        if line.split()[:1] == ["17179869184"]:
            words = line.split()
            tagged += [f"[1,0]<stdout>:{' '.join(words[:5])}", f"[1,0]<stdout>:    {'  '.join(words[5:])}"]
        else:
            tagged.append(f"[1,0]<stdout>:{line}")
    path = tmp_path / "all_reduce_perf-tagged.log"
    path.write_text("\n".join(tagged) + "\n")
    proc = wirewise("import", "nccl-tests", str(path), "--json", "--db", db_url)
    assert proc.returncode == 0 and "columns" not in proc.stderr, proc.stderr
    [run] = __import__("json").loads(proc.stdout)["sections"]
    assert (run["sizes"], run["largest_bytes"], run["ranks"]) == (32, 17179869184, 16)
    [row] = _stored(db_url, bytes=17179869184, in_place=False)
    assert (row.time_us, row.busbw_gbs) == (90115.0, 357.46)
