"""Free GPUs as Slurm reports them: `scontrol show node -d` lines in the formats seen on
clusters (typed GRES with index ranges, several types, nothing in use), and --free lists."""

from __future__ import annotations

import pytest

from wirewise.errors import UserError
from wirewise.orchestrator.placement.free import expand_indices, parse_free_list, used_from_scontrol

NODE = """NodeName=gpu01 Arch=x86_64 CoresPerSocket=48
   Gres=gpu:h200:8(S:0-1)
   GresDrain=N/A
   GresUsed={used}
   NodeAddr=gpu01 NodeHostName=gpu01"""


@pytest.mark.parametrize(
    ("used", "expected"),
    [
        ("gpu:h200:2(IDX:0-1)", {0, 1}),
        ("gpu:h200:4(IDX:0,2,5-6)", {0, 2, 5, 6}),
        ("gpu:h100:1(IDX:3),gpu:a100:2(IDX:6-7)", {3, 6, 7}),
        ("gpu:h200:0(IDX:N/A)", set()),
        ("gpu:(null):0(IDX:N/A)", set()),
        ("gpu:0", set()),
    ],
)
def test_gres_used_indices(used: str, expected: set[int]) -> None:
    assert used_from_scontrol(NODE.format(used=used)) == expected


def test_free_lists_and_ranges() -> None:
    assert parse_free_list("2,3,5-7", 8) == [2, 3, 5, 6, 7]
    assert expand_indices("N/A") == set()
    with pytest.raises(UserError, match="'7-' is not a GPU index"):
        parse_free_list("1,7-", 8)
