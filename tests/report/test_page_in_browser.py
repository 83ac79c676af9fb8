"""The report's HTML page in a real headless Chromium (Debian's chromium-headless-shell,
installed by tests/report/browser.sh, driven by playwright): it loads with no missing
resource and no console error, every figure decodes, and a screenshot shows them."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from tests.conftest import wirewise_json
from tests.report.conftest import check_numbers
from tests.services import unavailable

BROWSER_SCRIPT = Path(__file__).with_name("browser.sh")
MATPLOTLIB_BLUE = (31, 119, 180)  # the first line colour (C0, #1f77b4)


@pytest.fixture(scope="session")
def chromium() -> str:
    try:
        import playwright  # noqa: F401
    except ImportError:
        unavailable("playwright", "pip install playwright (the test extra)")
    proc = subprocess.run([str(BROWSER_SCRIPT), "path"], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        unavailable("chromium-headless-shell", proc.stderr[-4000:])
    return proc.stdout.strip()


def test_the_page_loads_whole_and_shows_its_figures(report_db, tmp_path, chromium):
    from playwright.sync_api import sync_playwright

    written = wirewise_json("report", "--out", str(tmp_path / "out"), "--include-cpu", "--db", report_db)
    errors, failed = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("requestfailed", lambda request: failed.append(request.url))
        page.goto(Path(written["index"]).as_uri())
        page.wait_for_load_state("load")
        widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
        first = page.locator("img").first
        first.scroll_into_view_if_needed()
        shot = tmp_path / "figure.png"
        first.screenshot(path=str(shot))
        browser.close()
    assert errors == [] and failed == []
    assert len(widths) == len(written["figures"]) and all(w > 0 for w in widths)
    assert _share_of_colour(shot, MATPLOTLIB_BLUE) > 0.0001 and _share_bluish(shot) > 0.002 and _share_not_white(shot) > 0.02


def _pixels(path: Path):
    import matplotlib.image

    return (matplotlib.image.imread(str(path))[:, :, :3] * 255).round()


def _share_of_colour(path: Path, rgb: tuple[int, int, int]) -> float:
    pixels = _pixels(path)
    return float((abs(pixels - rgb).max(axis=2) <= 12).mean())


def _share_bluish(path: Path) -> float:
    """The first wire's colour, also where its line is drawn half-transparent over white."""
    pixels = _pixels(path)
    return float(((pixels[:, :, 2] > pixels[:, :, 0] + 40) & (pixels[:, :, 2] > pixels[:, :, 1] + 20)).mean())


def _share_not_white(path: Path) -> float:
    return float((_pixels(path).min(axis=2) < 200).mean())


def test_the_summary_is_the_results_and_no_figure_misleads(measured_db, tmp_path, chromium):
    """The 2x H200 page as a reader opens it: the summary comes first, every number in it is a
    figure of `results --json` on the same database (or a ratio of two), no figure draws one x
    value as a line, none is empty, no two are the same image."""
    import json

    from playwright.sync_api import sync_playwright

    written = wirewise_json("report", "--out", str(tmp_path / "out"), "--db", measured_db)
    rows = wirewise_json("results", "--db", measured_db)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.goto(Path(written["index"]).as_uri())
        page.wait_for_load_state("load")
        headings = page.eval_on_selector_all("h2", "hs => hs.map(h => h.textContent)")
        numbers = page.eval_on_selector_all(".summary .num", """els => els.map(e => ({text: e.textContent,
            value: Number(e.dataset.value), row: e.dataset.row ? JSON.parse(e.dataset.row) : null, metric: e.dataset.metric,
            scale: Number(e.dataset.scale || 1), of: e.dataset.of ? JSON.parse(e.dataset.of) : null}))""")
        images = page.eval_on_selector_all("img[data-figure]", """imgs => imgs.map(i => ({name: i.dataset.figure,
            panels: JSON.parse(i.dataset.panels), src: i.src, width: i.naturalWidth}))""")
        links = page.eval_on_selector_all("nav a", "as => as.map(a => a.getAttribute('href').slice(1))")
        missing = [name for name in links if page.locator(f"[id='{name}']").count() != 1]
        page.screenshot(path=str(tmp_path / "page.png"), full_page=True)
        browser.close()
    assert headings[:2] == ["Contents", "Summary"] and missing == []
    assert len(numbers) > 30
    check_numbers(numbers, rows)
    assert [image["name"] for image in images] == [figure["name"] for figure in written["figures"]]
    assert all(image["width"] > 0 for image in images)
    assert len({hashlib.sha256(image["src"].encode()).hexdigest() for image in images}) == len(images)
    specs = [json.dumps(figure["panels"], sort_keys=True) for figure in written["figures"]]
    assert len(set(specs)) == len(specs)
    for image in images:
        for panel in image["panels"]:
            assert panel["series"] > 0 and panel["xs"] > 0, (image["name"], panel)  # no empty panel
            assert panel["kind"] == "bars" or panel["xs"] > 1, (image["name"], panel)  # one x value: bars, never a line
