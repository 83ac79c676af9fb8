"""`wirewise report` as a process: the figures' series are read back from the data that drew
them (`--json` prints it), the PNG files are checked as PNG, the page as self-contained."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import wirewise, wirewise_json
from tests.report.conftest import check_numbers

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
NCCL = "nvlink-all-to-all 8 GPUs [nccl-tests]"  # the imported H100 log: one line per form (in place, out of place)
CPU = "CPU ranks (gloo)"


def report(url: str, out, *args: str) -> dict:
    return wirewise_json("report", "--out", str(out), *args, "--db", url)


def by_name(written: dict) -> dict[str, dict]:
    return {figure["name"]: figure for figure in written["figures"]}


def series(figure: dict, panel: int = 0) -> dict[str, dict]:
    return {s["label"]: s for s in figure["panels"][panel]["series"]}


def summary(written: dict) -> dict[str, str]:
    return {section["title"]: " ".join(section["sentences"]) for section in written["summary"]}


def test_gpu_results_alone_make_the_bandwidth_figures(report_db, tmp_path):
    written = report(report_db, tmp_path / "out")
    figures = by_name(written)
    # one GPU count (8): bars of the largest size per op, not a line through one point
    assert set(figures) == {"busbw-by-size-all_reduce", "busbw-at-large-sizes"}
    cpu = wirewise_json("results", "--include-cpu", "--group-by", "device", "--db", report_db)
    [left] = written["left_out"]  # the CPU-rank runs, counted and named with the option that shows them
    assert (left["results"], left["show"]) == (sum(r["count"] for r in cpu if r["device"] == "cpu"), "--include-cpu")
    by_size = figures["busbw-by-size-all_reduce"]
    assert [panel["title"] for panel in by_size["panels"]] == ["nvlink-all-to-all, out of place", "nvlink-all-to-all, in place"]
    out_of_place, in_place = series(by_size, 0)[NCCL], series(by_size, 1)[NCCL]
    assert out_of_place["x"] == [2**k for k in range(25, 35)] and out_of_place["source"] == "nccl-tests"
    # 1 GiB: out of place 464.97 469.67 472.02 474.37, in place 465.35 470.05 472.40 474.75: each its own median
    assert out_of_place["y"][5] == pytest.approx((469.67 + 472.02) / 2)
    assert in_place["y"][5] == pytest.approx((470.05 + 472.40) / 2)
    large = figures["busbw-at-large-sizes"]
    assert [(p["title"], p["kind"]) for p in large["panels"]] == [("out of place", "bars"), ("in place", "bars")]
    bars = series(large, 0)[NCCL]
    # 16 GiB, the largest size, out of place: 482.27 x (0.99, 1, 1.005, 1.01) = 477.45 482.27 484.68 487.09
    assert (bars["x"], bars["y"]) == (["all_reduce"], [pytest.approx((482.27 + 484.68) / 2)])
    assert large["panels"][0]["ticks"] == ["all_reduce 16G"]
    for figure in written["figures"]:
        with open(figure["file"], "rb") as png:
            assert png.read(8) == PNG_MAGIC


def test_cpu_runs_on_request_with_transport_and_strategy_figures(report_db, tmp_path):
    figures = by_name(report(report_db, tmp_path / "out", "--include-cpu"))
    # two GPU counts (8 imported, 2 CPU ranks): by GPU count, per op; forced PCIe is in the by-size panels, no figure of its own
    assert set(figures) == {f"busbw-by-size-{op}" for op in ("all_reduce", "all_gather", "reduce_scatter")} | {
        f"busbw-by-gpus-{op}" for op in ("all_reduce", "all_gather", "reduce_scatter")} | {"strategies-tiny-mistral"}
    by_size = figures["busbw-by-size-all_reduce"]
    assert [panel["title"] for panel in by_size["panels"]] == [
        "nvlink-all-to-all, out of place", "nvlink-all-to-all, in place", "CPU ranks (gloo), in place"]
    assert set(series(by_size, 2)) == {f"{CPU} 2 ranks", f"{CPU}, PCIe forced 2 ranks"}
    gathers = figures["busbw-by-size-all_gather"]
    for panel in range(len(gathers["panels"])):
        assert all(s["x"] == [1024, 4096, 16384] and all(y > 0 for y in s["y"]) for s in series(gathers, panel).values())
    # all_gather ran on one rank count: its by-GPU-count panels are bars, not lines
    assert {panel["kind"] for panel in figures["busbw-by-gpus-all_gather"]["panels"]} == {"bars"}
    # all_reduce: out of place only the 8 imported GPUs (bars), in place 2 CPU ranks and 8 GPUs (a line)
    assert [panel["kind"] for panel in figures["busbw-by-gpus-all_reduce"]["panels"]] == ["bars", "count"]
    dial = figures["strategies-tiny-mistral"]
    [throughput] = dial["panels"][0]["series"]
    [memory] = dial["panels"][1]["series"]
    assert throughput["label"] == memory["label"] == CPU and throughput["x"] == memory["x"] == ["ddp", "fsdp"]
    assert dial["panels"][0]["ticks"] == ["DDP", "FSDP"]
    assert all(y > 0 for y in throughput["y"] + memory["y"]) and throughput["notes"] == [None, None]


def test_the_page_embeds_every_figure_and_the_wiring(report_db, tmp_path):
    written = report(report_db, tmp_path / "out", "--campaign", "camp-a", "--include-cpu")
    page = (tmp_path / "out" / "index.html").read_text()
    # by size, 3 ops, and one bar figure at the largest size (one rank count)
    assert page.count('src="data:image/png;base64,') == len(written["figures"]) == 4
    assert "http://" not in page and "https://" not in page and "<script" not in page and "@media print" in page
    [node] = written["nodes"]
    assert node["fabric"] == "nvlink-groups" and node["groups"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert f"<h3>{node['node']}: nvlink-groups</h3>" in page and "<td>NV6</td>" in page
    anchors = set(re.findall(r'href="#([^"]+)"', page))
    ids = set(re.findall(r'id="([^"]+)"', page))
    assert anchors <= ids and {figure["name"] for figure in written["figures"]} <= anchors and "summary" in anchors


def test_imported_results_are_marked_on_the_page(report_db, tmp_path):
    written = report(report_db, tmp_path / "out", "--source", "nccl-tests")
    page = (tmp_path / "out" / "index.html").read_text()
    assert f'<th class="imported">{NCCL}</th>' in page
    assert summary(written)["What was measured"].startswith("80 results (80 imported from nccl-tests) from 4 nodes")


def test_the_2xh200_summary_reads_as_the_measurements(measured_db, tmp_path):
    """The summary of the real 2x H200 measurements: every figure as `results` has it."""
    written = report(measured_db, tmp_path / "out")
    said = summary(written)
    assert list(said) == ["What was measured", "Bandwidth at large messages", "What the wire and the placement cost",
                          "The strategy each wire favours", "Memory per strategy", "What doctor flags"]
    assert said["What was measured"].startswith("205 results (132 imported from nccl-tests, 73 measured by wirewise) from 1 node (vm)")
    bandwidth = said["Bandwidth at large messages"]
    # all_reduce at 1 GiB: wirewise 323.07, nccl-tests 325.92 (in place); 450 GB/s = 18 NVLinks x 25 GB/s (H200)
    assert "against 450 GB/s, the NVLink line rate (H200" in bandwidth
    assert "all_reduce (in place) 323.1 GB/s (72% of the line rate; nccl-tests 325.9 GB/s, wirewise at 99%)" in bandwidth
    assert "against 64 GB/s, the PCIe line rate" in bandwidth and "all_reduce (in place) 27.8 GB/s (43% of the line rate" in bandwidth
    assert "all_reduce at 1G 323.1 GB/s against 27.8 GB/s (11.6x)" in said["What the wire and the placement cost"]
    assert "the wire alone is worth 10.6-11.6x" in said["What the wire and the placement cost"]
    assert ("fsdp is fastest at 106,210 tokens/s, 5.0% ahead of zero2 (101,161), 8.6% ahead of ddp (97,842); one run each"
            in said["The strategy each wire favours"])
    memory = said["Memory per strategy"]
    assert "ddp 42.8 GB, zero2 25.1 GB, fsdp 23.4 GB; the most is 30% of one GPU's 141 GB; fsdp holds 45% less than ddp" in memory
    assert "ddp of mistral-7b on 1 GPU, bf16-mixed, batch 1, seq 512 ran out of memory under a cap of 80 GB" in memory
    assert said["What doctor flags"].startswith("doctor cannot judge 1 node (vm)")
    figures = by_name(written)
    assert set(figures) == {"busbw-by-size-all_gather", "busbw-by-size-all_reduce", "busbw-by-size-reduce_scatter",
                            "busbw-at-large-sizes", "strategies-mistral-1b", "strategies-mistral-7b"}
    [oom] = figures["strategies-mistral-7b"]["panels"]  # no run finished: the memory it reached, labelled, no empty throughput axis
    [bar] = oom["series"]
    assert bar["notes"] == ["oom"] and bar["y"][0] == pytest.approx(80.558787584)
    assert sorted(oom["limits"]) == [[80.0, "the run's memory cap 80 GB"], [141.0, "GPU memory 141 GB"]]
    # one colour per wire: NVLink and forced PCIe, wirewise and nccl-tests alike
    wires = {s["wire"] for f in written["figures"] for p in f["panels"] for s in p["series"]}
    assert wires == {"nvlink-all-to-all", "nvlink-all-to-all, PCIe forced"}


def test_a_long_history_reads_in_a_few_sentences(tmp_path):
    """3,000 results shaped like a cluster's (the benchmark's: 16 nodes on four wirings, 2/4/8
    GPUs, packed and spread, forced PCIe, 3 models x 5 strategies, failures): a sentence per wire
    or model where case by case would be dozens, every number still a figure of `results`."""
    from tests.benchmarks.bench_results import build

    build(tmp_path / "history.db", 3000)
    url = f"sqlite:///{tmp_path / 'history.db'}"
    written = report(url, tmp_path / "out")
    rows = wirewise_json("results", "--db", url)
    sections = {section["title"]: section for section in written["summary"]}
    wires = 10  # 4 fabrics: packed, spread, forced PCIe
    assert all(len(section["sentences"]) <= wires for section in sections.values())
    favoured = " ".join(sections["The strategy each wire favours"]["sentences"])
    assert favoured.count(" settings, the fastest strategy was ") == len(sections["The strategy each wire favours"]["sentences"])
    assert [s.split(":")[0] for s in sections["Memory per strategy"]["sentences"]] == ["dinov2-large", "mistral-1b", "mistral-7b"]
    assert "doctor flags" in " ".join(sections["What doctor flags"]["sentences"])  # 3,000 results: judged here
    with sqlite3.connect(tmp_path / "history.db") as db:  # and nothing recorded: a report is no doctor run
        assert db.execute("SELECT count(*) FROM node_checks").fetchone() == (0,)
    check_numbers([n for section in written["summary"] for n in section["numbers"]], rows)


def test_a_reused_folder_keeps_only_what_this_report_wrote(report_db, tmp_path):
    out = tmp_path / "out"
    first = report(report_db, out, "--include-cpu")
    (out / "notes.txt").write_text("mine")
    second = report(report_db, out)
    gone = {Path(f["file"]).name for f in first["figures"]} - {Path(f["file"]).name for f in second["figures"]}
    assert gone and sorted(second["removed"]) == sorted(gone)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [".wirewise-report.json", "index.html", "notes.txt", *(Path(f["file"]).name for f in second["figures"])])


@pytest.mark.parametrize(("args", "message"), [
    (("--campaign", "nope"), "--campaign 'nope': no results or campaign of that name"),
    (("--fabric", "nvlink"), "--fabric 'nvlink' is ambiguous"),
    (("--since", "2026-13-45"), "--since '2026-13-45': give a date"),
    (("--since", "2099-01-01"), "no results match: nothing to report"),
])
def test_bad_input_writes_nothing(report_db, tmp_path, args, message):
    proc = wirewise("report", "--out", str(tmp_path / "out"), *args, "--db", report_db)
    assert proc.returncode == 2 and proc.stderr.startswith(f"wirewise: error: {message}") and proc.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_a_reused_canvas_draws_each_figure_as_if_alone(tmp_path):
    """Figures of one shape share a matplotlib figure (draw._canvas): what one drew (lines,
    bars, the notes of empty slots, its legend) is gone from the next, pixel for pixel."""
    import numpy as np
    from PIL import Image

    from wirewise.orchestrator.report import draw
    from wirewise.orchestrator.report.figures import Figure, Panel, Series

    def figure(name: str, scale: float, notes: list) -> Figure:
        lines = [Series(f"line {i}", "nccl-tests" if i % 2 else "wirewise", [2**20, 2**24, 2**30], [scale * i, scale * 2 * i, 3.0])
                 for i in range(1, 4)]
        bars = [Series(f"wire {i}", "wirewise", ["ddp", "fsdp"], [None if note else scale * i for note in notes], notes) for i in (1, 2)]
        return Figure(name, f"{name} title", [Panel(f"{name} panel", "size", "GB/s", "size", lines),
                                              Panel("", "strategy", "tokens/s", "bars", bars)])

    first, second = figure("first", 10.0, ["oom", None]), figure("second", 1.0, [None, None])
    draw._canvas.cache_clear()
    alone = np.asarray(Image.open(draw.draw(second, tmp_path)))
    draw._canvas.cache_clear()
    (tmp_path / "after").mkdir()
    draw.draw(first, tmp_path / "after")
    after = np.asarray(Image.open(draw.draw(second, tmp_path / "after")))
    assert draw._canvas.cache_info().hits == 1 and alone.shape == after.shape
    assert (alone != after).any(axis=-1).sum() == 0
