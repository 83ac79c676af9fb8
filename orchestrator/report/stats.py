"""The statistics every aggregate carries, and the test compare judges a difference by.

Spread (the `*_spread` keys of results, compare's `spread`) is the range relative to the
median, (max - min) / median: 0.05 means the repeats lie within 5% of each other. It describes
the repeats; it is never the test of a difference, and it is unitless everywhere it appears.

A difference between two sets of repeats is judged by the Wilcoxon-Mann-Whitney rank-sum test,
two-sided, at ALPHA = 0.05: when the two sides measure the same thing, at most 5% of compares
call them different, however many repeats each side has (overlapping ranges, the rule before,
grew more lenient with every repeat: the range of 20 runs overlaps almost anything). The
p-value is exact (the rank sum's distribution over every way to split the pooled values, ties
at their mid-rank, enumerated by dynamic programming) for small sides (EXACT_UP_TO), else the normal approximation with the tie correction (Lehmann, Nonparametrics,
1975, ch. 1). A consequence the verdict states: with few repeats no difference can be shown at
all (2 runs against 2: the smallest p is 1/3; 4 against 4: 2/70 = 0.029).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

ALPHA = 0.05  # compare's false-alarm rate: the chance to call two sides different when they are not
# The rank-sum p-value is exact up to 24 pooled runs, or where the smaller side has at most 8
# (the enumeration grows with both); beyond, each side has 9 or more, where the normal
# approximation was within 0.003 of the exact p between 0.01 and 0.1 (2,100 draws, 9 to 15 a side).
EXACT_UP_TO, EXACT_SMALL_SIDE = 24, 8


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


def stats_of(values: Sequence[float | None]) -> Stats | None:
    """Stats of the values that are present; None when there are none."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    return Stats(statistics.median(present), min(present), max(present), len(present))


def rank_sum_p(a: Sequence[float], b: Sequence[float]) -> float:
    """The two-sided p-value of the Wilcoxon-Mann-Whitney test that `a` and `b` come from one
    distribution (the module's docstring says how it is computed)."""
    if len(a) > len(b):  # the test is symmetric; the enumeration is over the smaller side
        a, b = b, a
    pooled = sorted([(value, 0) for value in a] + [(value, 1) for value in b])
    doubled = _doubled_ranks([value for value, _ in pooled])
    n, m = len(a), len(pooled)
    observed = sum(rank for rank, (_, side) in zip(doubled, pooled) if side == 0)
    mean = n * (m + 1)  # of the doubled rank sum
    if len(set(doubled)) == 1:
        return 1.0
    if m <= EXACT_UP_TO or n <= EXACT_SMALL_SIDE:
        return _exact_p(doubled, n, abs(observed - mean), mean)
    ties = sum(t**3 - t for t in _tie_sizes(doubled))
    variance = n * (m - n) / 12 * ((m + 1) - ties / (m * (m - 1)))  # of the rank sum
    z = (abs(observed - mean) / 2 - 0.5) / math.sqrt(variance)  # continuity-corrected
    return min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))


def _doubled_ranks(values: list[float]) -> list[int]:
    """Twice each sorted value's rank, ties at their mid-rank (so every rank is an integer)."""
    ranks, i = [], 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:
            j += 1
        ranks += [i + j + 2] * (j - i + 1)  # 2 x the mean of ranks i+1..j+1
        i = j + 1
    return ranks


def _tie_sizes(ranks: list[int]) -> list[int]:
    counts: dict[int, int] = {}
    for rank in ranks:
        counts[rank] = counts.get(rank, 0) + 1
    return list(counts.values())


def _exact_p(ranks: list[int], n: int, distance: float, mean: int) -> float:
    """P(|S - mean| >= distance) for S the doubled rank sum of n of `ranks` drawn at random."""
    ways: list[dict[int, int]] = [{0: 1}] + [{} for _ in range(n)]  # ways[k][s]: k ranks chosen summing to s
    for rank in ranks:
        for k in range(n, 0, -1):
            for total, count in ways[k - 1].items():
                ways[k][total + rank] = ways[k].get(total + rank, 0) + count
    extreme = sum(count for total, count in ways[n].items() if abs(total - mean) >= distance - 1e-9)
    return extreme / math.comb(len(ranks), n)
