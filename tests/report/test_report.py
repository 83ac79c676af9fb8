"""`wirewise report` as a process: the figures' series are read back from the data that drew
them (`--json` prints it), the PNG files are checked as PNG, the page as self-contained."""

from __future__ import annotations

import pytest

from tests.conftest import wirewise, wirewise_json

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# In the nvlink-all-to-all panel: out of place and in place are lines of their own (one case each).
NCCL_OUT, NCCL_IN = "out of place packed 1 x 8 GPUs [nccl-tests]", "in place packed 1 x 8 GPUs [nccl-tests]"
CPU_LINE = "1 x 2 CPU ranks"  # in the nvlink-groups panel


def report(url: str, out, *args: str) -> dict:
    return wirewise_json("report", "--out", str(out), *args, "--db", url)


def by_name(written: dict) -> dict[str, dict]:
    return {figure["name"]: figure for figure in written["figures"]}


def series(figure: dict, panel: int = 0) -> dict[str, dict]:
    return {s["label"]: s for s in figure["panels"][panel]["series"]}


def test_gpu_results_alone_make_the_bandwidth_figures(report_db, tmp_path):
    written = report(report_db, tmp_path / "out")
    figures = by_name(written)
    assert set(figures) == {"busbw-by-size-all_reduce", "busbw-by-gpus-all_reduce"}
    cpu = wirewise_json("results", "--include-cpu", "--group-by", "device", "--db", report_db)
    [left] = written["left_out"]  # the CPU-rank runs, counted and named with the option that shows them
    assert (left["results"], left["show"]) == (sum(r["count"] for r in cpu if r["device"] == "cpu"), "--include-cpu")
    [panel] = figures["busbw-by-size-all_reduce"]["panels"]
    assert panel["title"] == "nvlink-all-to-all"
    by_size = series(figures["busbw-by-size-all_reduce"])
    assert list(by_size) == [NCCL_OUT, NCCL_IN]
    out_of_place, in_place = by_size[NCCL_OUT], by_size[NCCL_IN]
    assert out_of_place["x"] == [2**k for k in range(25, 35)] and out_of_place["source"] == "nccl-tests"
    # 1 GiB: out of place 464.97 469.67 472.02 474.37, in place 465.35 470.05 472.40 474.75: each its own median
    assert out_of_place["y"][5] == pytest.approx((469.67 + 472.02) / 2)
    assert in_place["y"][5] == pytest.approx((470.05 + 472.40) / 2)
    by_gpus = series(figures["busbw-by-gpus-all_reduce"])["nvlink-all-to-all out of place packed 1 node [nccl-tests]"]
    # 16 GiB, the largest size, out of place: 482.27 x (0.99, 1, 1.005, 1.01) = 477.45 482.27 484.68 487.09
    assert (by_gpus["x"], by_gpus["y"]) == ([8], [pytest.approx((482.27 + 484.68) / 2)])
    for figure in written["figures"]:
        with open(figure["file"], "rb") as png:
            assert png.read(8) == PNG_MAGIC


def test_cpu_runs_on_request_with_transport_and_strategy_figures(report_db, tmp_path):
    figures = by_name(report(report_db, tmp_path / "out", "--include-cpu"))
    assert set(figures) == {f"busbw-by-size-{op}" for op in ("all_reduce", "all_gather", "reduce_scatter")} | {
        f"busbw-by-gpus-{op}" for op in ("all_reduce", "all_gather", "reduce_scatter")} | {
        f"nvlink-vs-pcie-{op}" for op in ("all_reduce", "all_gather", "reduce_scatter")} | {"strategies-tiny-mistral"}
    by_size = figures["busbw-by-size-all_reduce"]
    assert [panel["title"] for panel in by_size["panels"]] == ["nvlink-all-to-all", "nvlink-groups"]
    assert (set(series(by_size, 0)), set(series(by_size, 1))) == ({NCCL_OUT, NCCL_IN}, {f"default {CPU_LINE}", f"pcie {CPU_LINE}"})
    transports = series(figures["nvlink-vs-pcie-all_gather"])
    assert set(transports) == {f"{wire} {form} {CPU_LINE}" for wire in ("NVLink (default)", "PCIe (forced)")
                               for form in ("out of place", "in place")}
    assert all(s["x"] == [1024, 4096, 16384] and all(y > 0 for y in s["y"]) for s in transports.values())
    dial = figures["strategies-tiny-mistral"]
    [throughput] = dial["panels"][0]["series"]
    [memory] = dial["panels"][1]["series"]
    assert throughput["label"] == f"nvlink-groups {CPU_LINE}" and throughput["x"] == memory["x"] == ["ddp", "fsdp"]
    assert all(y > 0 for y in throughput["y"] + memory["y"]) and throughput["notes"] == [None, None]


def test_the_page_embeds_every_figure_and_the_wiring(report_db, tmp_path):
    written = report(report_db, tmp_path / "out", "--campaign", "camp-a", "--include-cpu")
    page = (tmp_path / "out" / "index.html").read_text()
    assert page.count('src="data:image/png;base64,') == len(written["figures"]) == 6  # by size and by GPUs, 3 ops
    assert "http://" not in page and "https://" not in page and "<script" not in page
    [node] = written["nodes"]
    assert node["fabric"] == "nvlink-groups" and node["groups"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert f"<h3>{node['node']}: nvlink-groups</h3>" in page and "<td>NV6</td>" in page


def test_imported_results_are_marked_on_the_page(report_db, tmp_path):
    report(report_db, tmp_path / "out", "--source", "nccl-tests")
    page = (tmp_path / "out" / "index.html").read_text()
    assert f'<th class="imported">{NCCL_OUT}</th>' in page
    assert "20 imported from nccl-tests" not in page and "80 results (80 imported from nccl-tests" in page


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
