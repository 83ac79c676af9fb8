"""What the service plugins (tests/slurm/fixture.py, tests/slurm/multinode.py, tests/pg/fixture.py)
share: starting a service through its script, failing or skipping when it cannot start, and
knowing whether other pytest sessions still use it before stopping it."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
from pathlib import Path
from typing import Callable, Iterator

import pytest


def unavailable(what: str, message: str) -> None:
    """A service could not be brought up: fail under CI (it must work there), skip elsewhere."""
    text = f"{what} unavailable:\n{message.strip()}"
    if os.environ.get("CI"):
        pytest.fail(text, pytrace=False)
    pytest.skip(text)


def start_service(what: str, script: Path, env: dict[str, str], folder: Path) -> tuple[subprocess.CompletedProcess, SharedUse]:
    """`SCRIPT start` (idempotent), then this session's share of the service in `folder` (its
    state folder); returns the script's result and the share. Several sessions (pytest-xdist
    workers, or a developer's second pytest) may start one service at once: the start and the
    taking of the share happen under one lock, as the last session's stop does."""
    with _service_lock(folder):
        try:
            proc = subprocess.run([str(script), "start"], env=env, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            unavailable(what, f"{script} start: {exc}")
        if proc.returncode != 0:
            unavailable(what, f"{script} start exited {proc.returncode}:\n{proc.stderr[-4000:]}")
        return proc, SharedUse(folder, started="already running" not in proc.stderr)


@contextlib.contextmanager
def _service_lock(folder: Path) -> Iterator[None]:
    """An exclusive lock beside the service's folder (which a first start has yet to make)."""
    folder = folder.resolve()
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def keep_services() -> bool:
    """WIREWISE_KEEP_SERVICES=1 leaves services running after the session (next start ~0.2 s)."""
    return os.environ.get("WIREWISE_KEEP_SERVICES") == "1"


class SharedUse:
    """Who uses a service folder: every session holds a shared flock on FOLDER/users.lock. A
    session that started the service marks the folder; the last session to leave (it can then
    take the lock exclusively) stops the service if the mark is there. Under pytest-xdist the
    worker that started a service is often not the last one using it."""

    MARK = "started-by-tests"

    def __init__(self, folder: Path, started: bool = False) -> None:
        self._folder = folder.resolve()
        self._file = open(self._folder / "users.lock", "a+")  # noqa: SIM115 - held for the session
        fcntl.flock(self._file, fcntl.LOCK_SH)
        if started:
            (self._folder / self.MARK).touch()

    def leave(self, stop: Callable[[], object], tidy: Callable[[], object] | None = None) -> None:
        """End this session's use. The last session out runs `stop` when a test session started
        the service and WIREWISE_KEEP_SERVICES is not set, else `tidy` (leave a service that
        keeps running as the next session expects it)."""
        with _service_lock(self._folder):
            fcntl.flock(self._file, fcntl.LOCK_UN)
            try:
                fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                self._file.close()
                return
            mark = self._folder / self.MARK
            try:
                if mark.exists() and not keep_services():
                    stop()
                    mark.unlink(missing_ok=True)
                elif tidy is not None:
                    tidy()
            finally:
                self._file.close()

    def others(self) -> bool:
        """Whether another session holds the lock too (tried by upgrading ours, then back)."""
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            fcntl.flock(self._file, fcntl.LOCK_SH)
        return False
