"""One parser and printer for range lists (wirewise.ranges), and every option that takes GPU
indices, GPU counts or CPU lists reading them the same way: `bench --gpus 0-1` as `place
--free 0-1` does (it used to refuse ranges), a bound checked before anything is expanded."""

from __future__ import annotations

import pytest

from tests.conftest import wirewise, wirewise_json
from tests.topology.common import NVL_QUADS_NAMED as NVL_QUADS  # place asks for the GPU model a file does not name
from wirewise.errors import UserError
from wirewise.ranges import ARRAY_INDICES, CPU_IDS, GPU_COUNTS, GPU_INDICES, format_ranges, parse_ranges


def test_lists_ranges_and_their_order() -> None:
    assert parse_ranges("0-3,8, 10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_ranges("3,1,2") == [3, 1, 2]  # in the order written: --gpus 3,1 ranks 3 first
    assert parse_ranges("0-3,2-5") == [0, 1, 2, 3, 4, 5]  # overlaps once
    assert parse_ranges("") == [] and parse_ranges(None) == [] and parse_ranges(" ") == []
    assert format_ranges([11, 0, 1, 2, 3, 8, 10, 8]) == "0-3,8,10-11" and format_ranges([]) == ""
    assert parse_ranges(format_ranges([0, 2, 3, 4, 9]), CPU_IDS) == [0, 2, 3, 4, 9]


@pytest.mark.parametrize(
    ("text", "kind", "distinct", "message"),
    [
        ("1,x", GPU_INDICES, False, "--x '1,x': 'x' is not a GPU index or range (e.g. 0,1,4-7)"),
        ("7-", GPU_INDICES, False, "'7-' is not a GPU index"),
        ("-1", GPU_INDICES, False, "'-1' is not a GPU index"),
        ("5-3", GPU_INDICES, False, "'5-3' runs backwards (write 3-5)"),
        ("0,0", GPU_INDICES, True, "names 0 twice"),
        ("1024", GPU_INDICES, False, "1024 is past the largest GPU index this takes (1023)"),
        ("0", GPU_COUNTS, False, "0 is not a GPU count (the smallest is 1)"),
        ("9" * 400, CPU_IDS, False, "99999999999999999999... is past the largest CPU id this takes (65535)"),
        (",".join(["0-1023"] * 2), GPU_INDICES, False, "names more values than there are (1024)"),
    ],
)
def test_bad_lists_are_one_line(text, kind, distinct, message) -> None:
    with pytest.raises(UserError) as caught:
        parse_ranges(text, kind, option="--x", distinct=distinct)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_the_bound_is_checked_before_expanding() -> None:
    """10^11 entries would take terabytes (the test would be killed, not fail); the number's
    text is refused first."""
    with pytest.raises(UserError, match="past the largest GPU index"):
        parse_ranges("0-99999999999", GPU_INDICES, option="--free")
    with pytest.raises(UserError, match=r"past the largest array index this takes \(4000000\)"):
        parse_ranges("0-4000001", ARRAY_INDICES)
    assert len(parse_ranges("0-4000000", ARRAY_INDICES)) == 4_000_001  # Slurm's largest array still reads


def test_place_refuses_a_huge_free_list_in_one_line(tmp_path) -> None:
    proc = wirewise("place", "-k", "2", "-f", str(NVL_QUADS), "--free", "0-99999999999", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == ("wirewise: error: --free '0-99999999999': 99999999999 is past the largest GPU index "
                           "this takes (1023)\n")


def test_bench_gpus_takes_ranges_as_place_free_does(tmp_path) -> None:
    """On CPU (no GPU here) gloo runs one CPU rank per index named: 0-1 is two ranks."""
    rows = wirewise_json("bench", "collectives", "--backend", "gloo", "--gpus", "0-1", "-b", "1K", "-e", "1K",
                         "--ops", "all_reduce", "--iters", "1", "--warmup", "0", "--db", f"sqlite:///{tmp_path}/w.db",
                         env={"WIREWISE_RUNS": str(tmp_path / "runs")}, cwd=tmp_path)
    assert {row["ranks"] for row in rows} == {2} and all(row["status"] == "ok" for row in rows)
    assert place_gpus("0-1") == [0, 1]


def place_gpus(free: str) -> list[int]:
    return wirewise_json("place", "-k", "2", "-f", str(NVL_QUADS), "--free", free)["gpus"]


def test_campaign_gpu_counts_take_ranges(tmp_path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: counts\nworkloads:\n  - collectives: {ops: [all_reduce], min_bytes: 1K, max_bytes: 1K}\n")
    plan = wirewise_json("campaign", "plan", str(spec), "--topology-file", str(NVL_QUADS), "--gpus", "2-4")
    assert sorted({len(t["gpus"]) for t in plan["tasks"]}) == [2, 3, 4]
    proc = wirewise("campaign", "plan", str(spec), "--topology-file", str(NVL_QUADS), "--gpus", "0,2")
    assert proc.returncode == 2 and "0 is not a GPU count" in proc.stderr
