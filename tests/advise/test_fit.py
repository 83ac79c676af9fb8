"""The fit recovers the parameters that made the steps it is given (steps built here from known
MFU and overlap, so the expected values are those parameters, not a fit's output), and does not
fit the overlap to what one result or noise can explain."""

from __future__ import annotations

import pytest

from wirewise import registry
from wirewise.orchestrator.advise.fit import Observation, fit
from wirewise.orchestrator.advise.params import model_shape
from wirewise.orchestrator.advise.step import Work, step_time

SHAPE = model_shape("mistral-1b")
H200 = 989e12


def observed(strategy: str, busbw: float, batch: int, mfu: float, hidden: float, noise: float = 1.0) -> Observation:
    work = Work(SHAPE.params, SHAPE.layers, batch * 2048, 2, H200, "bf16-mixed")
    step = step_time(registry.STRATEGIES[strategy], work, busbw, mfu, hidden).step_s * noise
    return Observation(strategy, work, dict.fromkeys(("all_reduce", "all_gather", "reduce_scatter"), busbw), step,
                       f"{strategy} at {busbw} GB/s")


def test_steps_on_two_wires_tell_overlap_from_mfu() -> None:
    """fsdp on NVLink (compute-bound) and through host memory (communication-bound), at
    MFU 0.35 with half of each phase's compute usable as cover."""
    steps = [observed("fsdp", busbw, batch, 0.35, 0.5) for busbw in (300.0, 28.0) for batch in (1, 4)]
    found = fit(steps)
    assert found.hidden == 0.5 and found.mfu == pytest.approx(0.35, rel=1e-3)
    assert found.rms_log_error < 1e-6 and found.results == 4


def test_one_step_fits_the_mfu_at_full_overlap() -> None:
    found = fit([observed("ddp", 300.0, 4, 0.31, 0.6)])
    assert found.hidden == 1.0 and found.rms_log_error < 1e-9  # one equation: the MFU alone


def test_noise_is_not_taken_for_overlap() -> None:
    """Two compute-bound steps 4% apart (run-to-run noise): no share below 1 is fitted to them."""
    steps = [observed("ddp", 300.0, 4, 0.31, 1.0), observed("ddp", 300.0, 4, 0.31, 1.0, noise=1.04)]
    assert fit(steps).hidden == 1.0


def test_nothing_to_fit() -> None:
    assert fit([]) is None
