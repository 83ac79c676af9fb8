"""A run's validation, as nccl-tests itself decides it.

Before 2.13 (src/common.cu) a row failed when its error exceeded DeltaMaxValue(type) x
(ranks - 1) (half and bfloat16 1e-2, float 1e-5, double 1e-12, integers any error at all);
since, the #wrong column counts wrong elements. A `#wrong` above 0 or an `Out of bounds
values : N FAILED` footer fails the run too. Every record of a failed run is stored with
status "failed" and the reason in `error`; `wrong` is the count nccl-tests printed, and for the
old float column 0 within the tolerance and 1 (at least one element) beyond it, the error kept
in extra.max_error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wirewise.orchestrator.record.nccl_tests.inference import Ranks
    from wirewise.orchestrator.record.nccl_tests.rows import Row, Timing
    from wirewise.orchestrator.record.nccl_tests.sections import Section

# DeltaMaxValue(type) of nccl-tests' src/common.cu (until 2.13, when #wrong replaced the float
# error column): a row failed when its error exceeded this times (ranks - 1); integers: any error.
ERROR_TOLERANCE = {"half": 1e-2, "bfloat16": 1e-2, "float": 1e-5, "double": 1e-12}
INTEGER_TOLERANCE = 1e-200


def validation_failure(section: Section, ranks: Ranks) -> str | None:
    """Why the run's validation failed (None: it did not), the old float error column judged
    as nccl-tests judged it (see wrong_count)."""
    reasons: list[str] = []
    more = 0
    if section.bounds and not section.bounds[1]:
        reasons.append(f"nccl-tests printed 'Out of bounds values : {section.bounds[0]} FAILED'")
    for row in section.rows:
        for in_place, timing in ((False, row.out_of_place), (True, row.in_place)):
            if timing is None or not wrong_count(row, timing, ranks):
                continue
            if len(reasons) >= 3:
                more += 1
                continue
            form = "in place" if in_place else "out of place"
            if timing.wrong:
                reasons.append(f"{timing.wrong} wrong elements at {row.size} B {form}")
            else:
                limit = _tolerance(row.type, ranks.count)
                reasons.append(f"error {timing.error:g} at {row.size} B {form} exceeds {row.type}'s tolerance {limit:.3g}")
    if not reasons:
        return None
    return "validation failed: " + "; ".join(reasons + ([f"{more} more"] if more else []))


def wrong_count(row: Row, timing: Timing, ranks: Ranks) -> int | None:
    """The count nccl-tests printed; for the old float error column 0 within the tolerance and
    1 (at least one element) beyond it; None where it printed N/A or the tolerance is unknown."""
    if timing.wrong is not None or timing.error is None:
        return timing.wrong
    limit = _tolerance(row.type, ranks.count)
    return None if limit is None else int(timing.error > limit)


def _tolerance(type_: str, ranks: int | None) -> float | None:
    """DeltaMaxValue(type) x (ranks - 1), nccl-tests' limit on the old error column; None
    where the rank count is unknown (the limit grows with it)."""
    if ranks is None:
        return None if type_ in ERROR_TOLERANCE else INTEGER_TOLERANCE
    return ERROR_TOLERANCE.get(type_, INTEGER_TOLERANCE) * max(ranks - 1, 1)
