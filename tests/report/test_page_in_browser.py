"""The report's HTML page in a real headless Chromium (Debian's chromium-headless-shell,
installed by tests/report/browser.sh, driven by playwright): it loads with no missing
resource and no console error, every figure decodes, and a screenshot shows them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import wirewise_json
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
    assert _share_of_colour(shot, MATPLOTLIB_BLUE) > 0.001 and _share_not_white(shot) > 0.02


def _pixels(path: Path):
    import matplotlib.image

    return (matplotlib.image.imread(str(path))[:, :, :3] * 255).round()


def _share_of_colour(path: Path, rgb: tuple[int, int, int]) -> float:
    pixels = _pixels(path)
    return float((abs(pixels - rgb).max(axis=2) <= 12).mean())


def _share_not_white(path: Path) -> float:
    return float((_pixels(path).min(axis=2) < 200).mean())
