"""A metric a run did not measure stays out of every figure, on SQLite and on PostgreSQL.

An image model reports samples/s but no tokens/s, and CPU ranks no MFU: the stored values are
NULL. SQLite's printf('%!.17g', NULL) is '0.0', so those NULLs once joined the medians as 0
(`results` showed 0 tokens/s and 0.0% MFU, `compare` of two such campaigns "no ok runs on a
side"). A NaN is as missing: SQLite stores it as NULL; PostgreSQL keeps it (and NaN = NaN
there), and it once read back as NaN. Each run here is a real training run's result file,
collected twice as two campaigns (conftest.py: image_run)."""

from __future__ import annotations

import math

import pytest

from tests.conftest import wirewise, wirewise_json
from tests.report.conftest import collect_as_campaign

CAMPAIGNS = ("img-a", "img-b")


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, image_run, tmp_path) -> str:
    """Both campaigns collected; img-b's MFU set to NaN, as an older wirewise could store it."""
    url = f"sqlite:///{tmp_path / 'wirewise.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    for campaign in CAMPAIGNS:
        collect_as_campaign(image_run, tmp_path, url, campaign)
    _set_nan(url, "mfu", "img-b")
    return url


def _set_nan(url: str, column: str, campaign: str) -> None:
    """The column NaN on the campaign's rows, through the driver (SQLite stores NULL)."""
    from wirewise.orchestrator.store import Store

    mark = "?" if url.startswith("sqlite") else "%s"  # the driver's placeholder
    with Store(url).session() as session:
        session.connection().exec_driver_sql(f"UPDATE results SET {column} = {mark} WHERE campaign = {mark}", (math.nan, campaign))


def test_results_leave_missing_metrics_out(url):
    [row] = wirewise_json("results", "--include-cpu", "--db", url)
    assert (row["model"], row["status"], row["count"], row["samples_per_s_count"]) == ("tiny-dinov2", "ok", 2, 2)
    assert row["samples_per_s_median"] > 0
    assert not any(key.startswith(("tokens_per_s", "mfu")) for key in row), row
    table = wirewise("results", "--include-cpu", "--db", url, check=True).stdout
    assert "0.0%" not in table and " 0 " not in table.replace("│", " "), table


def test_compare_uses_samples_where_no_side_has_tokens(url):
    [case] = wirewise_json("compare", *CAMPAIGNS, "--include-cpu", "--db", url)["cases"]
    assert (case["model"], case["metric"], case["ratio"], case["different"]) == ("tiny-dinov2", "samples_per_s", 1.0, None)
    assert case["a"]["median"] == case["b"]["median"] > 0
    table = wirewise("compare", *CAMPAIGNS, "--include-cpu", "--db", url, check=True).stdout
    assert "samples/s" in table and "no ok runs on a side" not in table, table


def test_the_report_draws_no_missing_value(url, tmp_path):
    """The report reads one row per result (wirewise.orchestrator.results.rows), not the groups: a NaN there is None too
    (PostgreSQL's case; SQLite read its NULLs as None on this path already). An image model's
    throughput panel draws its samples/s, the metric it measured, never the NaN tokens/s."""
    _set_nan(url, "tokens_per_s", "img-a")
    written = wirewise_json("report", "--out", str(tmp_path / "report"), "--include-cpu", "--db", url)
    [figure] = [f for f in written["figures"] if f["name"] == "strategies-tiny-dinov2"]
    ys = [y for panel in figure["panels"] for series in panel["series"] for y in series["y"]]
    throughput, memory = ([y for series in panel["series"] for y in series["y"]] for panel in figure["panels"])
    assert throughput and all(y > 0 for y in throughput) and memory[0] > 0, figure
    assert not any(isinstance(y, float) and math.isnan(y) for y in ys)
    samples = wirewise_json("results", "--include-cpu", "--db", url)[0]["samples_per_s_median"]
    assert min(throughput) <= samples <= max(throughput)
