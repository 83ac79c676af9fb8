"""Stops (SIGTERM, SIGINT, SIGHUP) while wirewise acts on Slurm: what `fleet drain`, `retest` and
`resume` do between a change to a node and its record must not be cut in two.

- `stops_raise()`: for its block, a stop raises Stopped, so that `finally` blocks run: a re-test drains its node again and deletes its reservation,
  claims are released, and the trail says what happened. Without it SIGTERM (what `kill`,
  `timeout` and a Slurm job's end send) and SIGHUP (a closed terminal) end the process where
  it stands: a node left resumed inside a reservation that soon ends.
- The stop is raised where the block waits (`pause`, the polls between a job's states) or at
  its end, never in the middle of a statement: an exception raised inside an import leaves the
  module half made (seen: asyncio's `coroutines` undefined in the cleanup that followed). A
  second stop is raised at once, wherever the program stands.
- `stops_held()`: a step that must finish whole (a node resumed and known to the cleanup; a
  drain and its record): a stop that arrives meanwhile is raised once the step is done.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Stopped(BaseException):
    """A stop signal; the command exits 128 + its number (wirewise.orchestrator.cli.main.run).
    A BaseException, as KeyboardInterrupt is, so that no `except Exception` swallows it, and
    not a KeyboardInterrupt, which typer turns into exit 130 whatever the signal was."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.name = signal.Signals(signum).name


class _State:
    received: list[int] = []
    waiting = False  # inside pause(): a stop may be raised there
    holding = 0  # stops_held() blocks entered


def _note(signum: int, _frame) -> None:
    _State.received.append(signum)
    if not _State.holding and (_State.waiting or len(_State.received) > 1):
        raise Stopped(signum)


@contextmanager
def _handled() -> Iterator[None]:
    previous = {sig: signal.signal(sig, _note) for sig in STOPS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def checkpoint() -> None:
    """Raise a stop received and not raised yet (outside stops_held)."""
    if _State.received and not _State.holding:
        raise Stopped(_State.received[0])


def pause(seconds: float) -> None:
    """time.sleep, during which a stop is raised at once."""
    checkpoint()
    _State.waiting = True
    try:
        time.sleep(seconds)
    finally:
        _State.waiting = False
    checkpoint()


@contextmanager
def stops_raise() -> Iterator[None]:
    _State.received = []
    with _handled():
        try:
            yield
        except BaseException:
            _State.received = []
            raise
        checkpoint()
    _State.received = []


@contextmanager
def stops_held() -> Iterator[None]:
    """The block runs whole; a stop received meanwhile is raised after it (unless the block
    itself ends by an exception, which then goes on)."""
    own = signal.getsignal(signal.SIGTERM) is not _note  # outside stops_raise: handled here alone
    _State.holding += 1
    try:
        with _handled() if own else nullcontext():
            yield
    finally:
        _State.holding -= 1
        received, _State.received = _State.received, ([] if own else _State.received)
    if received and not _State.holding:
        raise Stopped(received[0])


STOPPED = (Stopped, KeyboardInterrupt)  # what a stop raises: Stopped inside stops_raise, else SIGINT's own


def stop_name(exc: BaseException) -> str:
    """The signal a KeyboardInterrupt stands for (SIGINT where it is Python's own)."""
    return getattr(exc, "name", "SIGINT")
