"""A result row of an nccl-tests log: its columns read from a line's tokens, and a run's rows kept
in two arrays.

A row prints size, count, type, redop, root (older ops print one of them, or leave redop
blank), then time/algbw/busbw/#wrong out of place and again in place (very old logs: out of
place only). Before 2.13 the last column of each was `error`, the largest deviation as a float
(%5.0le: 2e-07), not the #wrong count; #wrong as %6g prints a large count as 1.04858e+06.

A row is stored only when whole (as many columns as its run's rows have: sections.Section
judges that) and its times and bandwidths are finite and non-negative (why_not_measured);
others are skipped with a warning naming their line. Rows of size 0 carry no bandwidth and are
not stored (counted in the summary).

Memory: a run's rows are kept column by column (RowTable, ~130 bytes a row, no object per
row), so a 200 MB log's ~800,000 rows fit (issue 29: a 20 MB log held 1.3 GB read whole).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator
from dataclasses import dataclass

from wirewise.record import figure_problem

MAX_DIGITS = 30  # digits of any integer read (a size past 2^63 is 19): longer is no log's, and int() refuses 4,300


@dataclass(slots=True)
class Timing:
    time_us: float
    algbw_gbs: float
    busbw_gbs: float
    wrong: int | None  # #wrong; None where the log says N/A (run without -c) or prints the old float error
    error: float | None = None  # the old format's largest error (before 2.13)


@dataclass(slots=True)
class Row:
    size: int
    count: int
    type: str
    redop: str
    root: int
    out_of_place: Timing
    in_place: Timing | None

    @property
    def key(self) -> tuple:
        """The row's values, hashable: what finds a row quoted again."""
        timings = [(t.time_us, t.algbw_gbs, t.busbw_gbs, t.wrong, t.error) for t in (self.out_of_place, self.in_place) if t]
        return (self.size, self.count, self.type, self.redop, self.root, *timings)


NONE_INT = -(2**63)  # RowTable's None of an integer column (#wrong N/A)


class RowTable:
    """A run's rows, column by column in two arrays, ~130 bytes a row and no object per row (a
    200 MB log holds ~800,000 rows); each Row is made again as it is read. Used as a list."""

    __slots__ = ("ints", "floats", "names")
    INTS, FLOATS = 7, 8  # size, count, root, type, redop, wrong x2; time, algbw, busbw, error x2

    def __init__(self):
        self.ints, self.floats, self.names = array("q"), array("d"), []

    def append(self, row: Row) -> None:
        ints, floats = [row.size, row.count, row.root, self._name(row.type), self._name(row.redop)], []
        for timing in (row.out_of_place, row.in_place):
            ints.append(NONE_INT if timing is None or timing.wrong is None else timing.wrong)
            floats += [math.nan] * 4 if timing is None else [
                timing.time_us, timing.algbw_gbs, timing.busbw_gbs, math.nan if timing.error is None else timing.error]
        if row.in_place is None:
            floats[4] = math.inf  # marks "no in-place timing" (a time is never infinite: why_not_measured)
        self.ints.extend(ints)
        self.floats.extend(floats)

    def _name(self, name: str) -> int:
        if name not in self.names:
            self.names.append(name)
        return self.names.index(name)

    def __len__(self) -> int:
        return len(self.ints) // self.INTS

    def __getitem__(self, index: int) -> Row:
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        i, f = self.ints[index * self.INTS : (index + 1) * self.INTS], self.floats[index * self.FLOATS : (index + 1) * self.FLOATS]
        timings = [Timing(f[k], f[k + 1], f[k + 2], None if i[5 + n] == NONE_INT else i[5 + n],
                          None if math.isnan(f[k + 3]) else f[k + 3]) for n, k in enumerate((0, 4))]
        return Row(i[0], i[1], self.names[i[3]], self.names[i[4]], i[2], timings[0], None if f[4] == math.inf else timings[1])

    def __iter__(self) -> Iterator[Row]:
        return (self[index] for index in range(len(self)))


def looks_like_row(tokens: list[str]) -> bool:
    """A line that starts like a result row (size, count, type): whole or not, it is one.
    Integers of more than MAX_DIGITS digits are no row's (and past Python's int() limit)."""
    return (len(tokens) >= 2 and tokens[0].isdigit() and tokens[1].isdigit() and len(tokens[0]) <= MAX_DIGITS
            and len(tokens[1]) <= MAX_DIGITS and (len(tokens) == 2 or not _is_number(tokens[2])))


def is_continuation(tokens: list[str]) -> bool:
    """Figures only: the rest of a row cut by another rank's output or by a launcher that
    tagged each piece it forwarded (a 16 GiB row's time is an integer: 90115)."""
    return bool(tokens) and all(_is_number(t) or t == "N/A" for t in tokens)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


_NAMES: dict[str, str] = {}  # one string object per type and redop name: millions of rows share a few


def parse_row(tokens: list[str], old_error_column: bool = False) -> Row | None:
    """A result row from a line's tokens, or None when they do not parse as one."""
    if len(tokens) < 7:
        return None
    size, count, type_ = int(tokens[0]), int(tokens[1]), tokens[2]
    rest = tokens[3:]
    # Columns between type and the timings: redop and root in current logs; older ones print
    # only one of them (broadcast: root; all_reduce: redop) or neither (all_gather, sendrecv).
    groups = 2 if len(rest) >= 8 else 1  # out of place, then in place (very old logs: one)
    label_count = len(rest) - 4 * groups
    if not 0 <= label_count <= 2:
        return None
    labels, timings = rest[:label_count], rest[label_count:]
    redop, root = "none", -1
    for label in labels:
        if _is_int(label):
            root = int(label)
        else:
            redop = label
    try:
        parsed = [_timing(timings[i : i + 4], old_error_column) for i in range(0, 4 * groups, 4)]
    except ValueError:
        return None
    type_, redop = _NAMES.setdefault(type_, type_), _NAMES.setdefault(redop, redop)
    if len(_NAMES) > 10_000:
        _NAMES.clear()
    return Row(size, count, type_, redop, root, parsed[0], parsed[1] if groups == 2 else None)


def why_not_measured(row: Row) -> str | None:
    """Why a parsed row is not a measurement (NaN, Inf or negative figures), or None."""
    for timing in (row.out_of_place, row.in_place):
        if timing is None:
            continue
        for name in ("time_us", "algbw_gbs", "busbw_gbs"):
            problem = figure_problem(name, getattr(timing, name))
            if problem:
                return problem
    wrong = [t.wrong for t in (row.out_of_place, row.in_place) if t and t.wrong is not None]
    if any(not NONE_INT < w < 2**63 for w in wrong):
        return "a #wrong count past 2^63"
    return figure_problem("size", row.size) or figure_problem("count", row.count)


def _timing(fields: list[str], old_error_column: bool) -> Timing:
    time_us, algbw, busbw, last = fields
    timing = Timing(float(time_us), float(algbw), float(busbw), None)
    if last == "N/A":
        return timing
    value = float(last)  # anything else is not a result row
    if _is_int(last) and not old_error_column:
        timing.wrong = int(last)
    elif old_error_column or not value.is_integer() or ("e" in last.lower() and "." not in last):
        timing.error = value  # the old format's largest error (%5.0le): 2e-07, 1e+00
    else:
        timing.wrong = int(value)  # #wrong as %6g prints a large count: 1.04858e+06
    return timing


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit() and len(text) <= MAX_DIGITS
