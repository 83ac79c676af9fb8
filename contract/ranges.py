"""Range lists, the one parser and printer for them: "0-3,8" <-> [0, 1, 2, 3, 8].

They name GPU indices (`--gpus 0-3`, `--free 0,1,4-7`, Slurm's `GresUsed=...(IDX:0-1)`), GPU
counts (`campaign plan --gpus 2,4,8`), CPU lists (nvidia-smi's affinity "0-47,96-143", sysfs,
gres.conf `Cores=`) and Slurm array indices (sacct's pending `1234_[0-9%4]`).

The parser bounds before it expands: each kind has a largest value, checked on the text of
every number, so a list holds at most that many values whatever it says; `--free
0-99999999999` is one line of error, not 10^11 entries. The bounds (wirewise.limits, where
every bound lives):
- GPU indices: 1023. No machine numbers more GPUs (NVML counts the GPUs of one host; the
  largest NVLink domain, NVL72, has 72), and fingerprints settle wirings of up to 256 GPUs
  (docs/contracts.md). GPU counts: MAX_RANKS, a task's GPUs over all its nodes.
- CPU ids: 65535. Linux's NR_CPUS is at most 8192.
- Slurm array indices: 4,000,000. MaxArraySize may not exceed 4,000,001 (slurm.conf(5)).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from wirewise.errors import UserError
from wirewise.limits import MAX_ARRAY_INDEX, MAX_CPU_ID, MAX_GPU_INDEX, MAX_RANKS


@dataclass(frozen=True)
class RangeKind:
    """What a list's numbers are, for the bound and the error message."""

    noun: str  # "a GPU index": what one item should have been
    largest: int
    example: str
    smallest: int = 0


GPU_INDICES = RangeKind("a GPU index", MAX_GPU_INDEX, "0,1,4-7")
GPU_COUNTS = RangeKind("a GPU count", MAX_RANKS, "2,4,8", smallest=1)
CPU_IDS = RangeKind("a CPU id", MAX_CPU_ID, "0-47,96-143")
ARRAY_INDICES = RangeKind("an array index", MAX_ARRAY_INDEX, "0-9")

_ITEM = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


def parse_ranges(text: str | None, kind: RangeKind = GPU_INDICES, option: str | None = None,
                 distinct: bool = False) -> list[int]:
    """'0-3,8' -> [0, 1, 2, 3, 8], in the order written, each value once; '' and None -> [].

    One UserError line, naming `option` (e.g. "--free") and the first bad item, for: an item
    that is not a number or a range, a range that runs backwards, a number outside the
    kind's bounds, and (`distinct`) a value named twice."""
    if text is None or not text.strip():
        return []
    label = f"{option} {text!r}" if option else repr(text)
    seen: set[int] = set()
    values: list[int] = []
    named = 0
    for part in text.split(","):
        found = _ITEM.fullmatch(part)
        if not found:
            raise UserError(f"{label}: {part.strip()!r} is not {kind.noun} or range (e.g. {kind.example})")
        low = _bounded(found.group(1), kind, label)
        high = _bounded(found.group(2), kind, label) if found.group(2) is not None else low
        if high < low:
            raise UserError(f"{label}: {part.strip()!r} runs backwards (write {high}-{low})")
        named += high - low + 1
        if named > kind.largest + 1:  # overlapping ranges, repeated: bounded work as well as size
            raise UserError(f"{label}: names more values than there are ({kind.largest + 1})")
        for value in range(low, high + 1):
            if value in seen:
                if distinct:
                    raise UserError(f"{label}: names {value} twice")
                continue
            seen.add(value)
            values.append(value)
    return values


def _bounded(digits: str, kind: RangeKind, label: str) -> int:
    """The number, checked against the bounds on its text first (no 400-digit int is made)."""
    significant = digits.lstrip("0") or "0"  # 5,000 zeros are 0, not a 5,000-digit int (Python refuses those)
    if len(significant) > len(str(kind.largest)) or int(significant) > kind.largest:
        raise UserError(f"{label}: {digits[:20]}{'...' if len(digits) > 20 else ''} is past the largest "
                        f"{kind.noun.split(' ', 1)[1]} this takes ({kind.largest})")
    value = int(significant)
    if value < kind.smallest:
        raise UserError(f"{label}: {value} is not {kind.noun} (the smallest is {kind.smallest})")
    return value


def format_ranges(values: Iterable[int]) -> str:
    """[11, 0, 1, 2, 3, 8, 10] -> '0-3,8,10-11' (sorted, each value once); [] -> ''."""
    ordered = sorted(set(values))
    parts: list[str] = []
    start = None
    for i, value in enumerate(ordered):
        if start is None:
            start = value
        if i + 1 == len(ordered) or ordered[i + 1] != value + 1:
            parts.append(f"{start}-{value}" if value > start else str(value))
            start = None
    return ",".join(parts)
