"""The statistics every aggregate carries: median, min, max, count and spread.

Spread is the range relative to the median, (max - min) / median: 0.05 means the repeats
lie within 5% of each other. compare and doctor judge a difference against it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Stats:
    median: float
    min: float
    max: float
    count: int

    @property
    def spread(self) -> float | None:
        """(max - min) / median; None when the median is 0 (nothing to scale by)."""
        return (self.max - self.min) / self.median if self.median else None

    def overlaps(self, other: Stats) -> bool:
        """Whether the two ranges of repeats share a value: a difference of medians is then
        inside the noise the repeats show."""
        return self.min <= other.max and other.min <= self.max


def stats_of(values: Sequence[float | None]) -> Stats | None:
    """Stats of the values that are present; None when there are none."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    return Stats(statistics.median(present), min(present), max(present), len(present))
