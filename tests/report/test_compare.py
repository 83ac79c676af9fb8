"""`wirewise compare` as a process: two campaigns of real CPU runs, and nodes whose imported
nccl-tests logs were scaled by hand (factors below), so the ratios are known in advance."""

from __future__ import annotations

import pytest

from tests.conftest import wirewise, wirewise_json
from tests.report.conftest import import_log


def compare(url: str, *args: str) -> dict:
    return wirewise_json("compare", *args, "--db", url)


def test_two_campaigns_side_by_side(report_db):
    result = compare(report_db, "camp-a", "camp-b", "--include-cpu")  # bare names: guessed as campaigns
    assert (result["a"], result["b"], result["only_a"], result["only_b"]) == ("campaign:camp-a", "campaign:camp-b", [], [])
    assert {(c["op"], c["bytes"]) for c in result["cases"]} == {
        (op, size) for op in ("all_gather", "all_reduce", "reduce_scatter") for size in (1024, 4096, 16384)}
    for case in result["cases"]:
        assert case["a"]["count"] == case["b"]["count"] == 2 and case["metric"] == "busbw_gbs"
        # 2 runs against 2: the smallest p a rank test can give is 1/3, so no difference can be shown at 0.05
        assert case["smallest_p"] == pytest.approx(1 / 3) and case["different"] is None and 0 < case["p"] <= 1


def test_single_runs_get_a_ratio_but_no_verdict(report_db):
    result = compare(report_db, "node:h100-a", "node:h100-b")
    assert len(result["cases"]) == 20
    [case] = [c for c in result["cases"] if c["bytes"] == 2**30 and not c["in_place"]]
    assert case["ratio"] == pytest.approx(469.67 / 464.97) and case["pdiff"] == pytest.approx(469.67 / 464.97 - 1)
    assert case["different"] is None and case["smallest_p"] == 1.0


def test_repeats_are_judged_by_a_rank_test_at_its_stated_false_alarm_rate(report_db, tmp_path):
    """Four runs a side: all of one side below all of the other is p = 2/70 (different at
    0.05); interleaved runs are no difference shown, however close their medians."""
    runs = {"slow": (0.6, 0.61, 0.605, 0.602), "fast": (1.0, 1.01, 0.995, 1.005), "fast-too": (0.997, 1.012, 0.996, 1.003)}
    for node, factors in runs.items():
        for factor in factors:
            import_log(tmp_path, report_db, node, factor)
    result = compare(report_db, "node:slow", "node:fast")
    assert result["alpha"] == 0.05
    [slow] = [c for c in result["cases"] if c["bytes"] == 2**30 and not c["in_place"]]
    assert slow["ratio"] == pytest.approx((0.602 + 0.605) / (1.0 + 1.005), rel=1e-3)
    assert (slow["different"], slow["p"]) == (True, pytest.approx(2 / 70))
    same = compare(report_db, "node:fast-too", "node:fast")["cases"]
    assert len(same) == 20 and all(case["different"] is False and case["p"] > 0.05 for case in same)


def test_one_sided_cases_are_listed(report_db):
    result = compare(report_db, "fabric:nvlink-all", "fabric:nvlink-g", "--include-cpu")
    assert result["cases"] == []
    assert len(result["only_a"]) == 20 and {(c["ranks"], c["node_count"]) for c in result["only_a"]} == {(8, 1)}
    assert {c["source"] for c in result["only_b"]} == {"wirewise"} and {c["transport"] for c in result["only_b"]} == {"default", "pcie"}


def test_the_table_marks_the_verdict(report_db):
    out = wirewise("compare", "camp-a", "camp-b", "--include-cpu", "--db", report_db, check=True).stdout
    assert "A = campaign:camp-a, B = campaign:camp-b" in out and "2 and 2 runs cannot show a difference at 0.05" in out


def test_nothing_in_common_is_said_and_what_each_side_left_out(report_db):
    """Without --include-cpu the campaigns of CPU runs have nothing to compare: each side says
    how many results it left out and how to show them."""
    result = compare(report_db, "camp-a", "camp-b")
    assert result["cases"] == [] and result["left_out_a"][0]["results"] == result["left_out_b"][0]["results"] > 0
    out = wirewise("compare", "fabric:nvlink-all", "fabric:nvlink-g", "--db", report_db, check=True).stdout
    assert "no case in common" in out and "left out: run on CPU ranks" in out and "--include-cpu shows them" in out


@pytest.mark.parametrize(("args", "message"), [
    (("camp-a", "nope"), "'nope': no campaign, node, fingerprint or fabric of that name"),
    (("campaign:camp-a", "campaign:nope"), "'campaign:nope': no campaign of that name"),
    (("fabric:nvlink", "camp-a"), "fabric 'nvlink' is ambiguous"),
])
def test_bad_sides_exit_2(report_db, args, message):
    proc = wirewise("compare", *args, "--db", report_db)
    assert proc.returncode == 2 and proc.stderr.startswith(f"wirewise: error: {message}") and proc.stderr.count("\n") == 1


def test_a_name_two_kinds_share_must_be_prefixed(report_db, tmp_path):
    import_log(tmp_path, report_db, "camp-a", 1.0)  # a node named like the campaign
    proc = wirewise("compare", "camp-a", "camp-b", "--db", report_db)
    assert proc.returncode == 2
    assert proc.stderr == "wirewise: error: 'camp-a' is ambiguous: write campaign:camp-a or node:camp-a\n"
    assert compare(report_db, "node:camp-a", "node:h100-a")["cases"][0]["ratio"] == 1.0
