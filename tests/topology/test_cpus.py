"""CPU ids to Slurm's logical core indices, from a machine's sysfs thread-sibling lists."""

from __future__ import annotations

from pathlib import Path

from wirewise.ranges import CPU_IDS, format_ranges, parse_ranges
from wirewise.topology import cpus


def fake_sysfs(root: Path, siblings: dict[int, str]) -> Path:
    for cpu, text in siblings.items():
        folder = root / f"cpu{cpu}" / "topology"
        folder.mkdir(parents=True)
        (folder / "thread_siblings_list").write_text(text + "\n")
    return root


def test_siblings_far_apart_and_adjacent(tmp_path: Path) -> None:
    # 4 cores x 2 threads, second threads after all first threads (x86 Linux): CPU i+4 is core i.
    apart = cpus.core_indices(fake_sysfs(tmp_path / "a", {c: f"{c % 4},{c % 4 + 4}" for c in range(8)}))
    assert cpus.logical_cores([0, 1, 4, 5], apart) == [0, 1]
    assert cpus.logical_cores([2, 3, 6, 7], apart) == [2, 3]
    # Siblings next to each other: CPUs 2 and 3 are the second core, index 1, not 2.
    adjacent = cpus.core_indices(fake_sysfs(tmp_path / "b", {c: f"{c - c % 2}-{c - c % 2 + 1}" for c in range(8)}))
    assert cpus.logical_cores([2, 3], adjacent) == [1]
    assert cpus.logical_cores([4, 5, 6, 7], adjacent) == [2, 3]


def test_unknown_cpus_or_no_sysfs_give_none(tmp_path: Path) -> None:
    core_of = cpus.core_indices(fake_sysfs(tmp_path / "a", {0: "0", 1: "1"}))
    assert cpus.logical_cores([0, 1], core_of) == [0, 1]
    assert cpus.logical_cores([1, 2], core_of) is None  # CPU 2 is not on this machine
    assert cpus.logical_cores([], core_of) is None
    assert cpus.core_indices(tmp_path / "empty") is None
    assert cpus.logical_cores([0], None) is None


def test_cpu_list_text_round_trip() -> None:
    assert parse_ranges("0-3,8, 10-11", CPU_IDS) == [0, 1, 2, 3, 8, 10, 11]
    assert format_ranges([11, 0, 1, 2, 3, 8, 10]) == "0-3,8,10-11"
    assert parse_ranges(None, CPU_IDS) == [] and format_ranges([]) == ""
    assert cpus.cpus_from_mask([0b1010, 1]) == [1, 3, 64]
