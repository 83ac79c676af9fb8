"""What the service plugins (tests/slurm/fixture.py, tests/pg/fixture.py) share: starting a
service through its script, failing or skipping when it cannot start, and knowing whether
other pytest sessions still use it before stopping it."""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path

import pytest


def unavailable(what: str, message: str) -> None:
    """A service could not be brought up: fail under CI (it must work there), skip elsewhere."""
    text = f"{what} unavailable:\n{message.strip()}"
    if os.environ.get("CI"):
        pytest.fail(text, pytrace=False)
    pytest.skip(text)


def start_service(what: str, script: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, bool]:
    """`SCRIPT start` (idempotent); returns its result and whether this call started it."""
    try:
        proc = subprocess.run([str(script), "start"], env=env, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        unavailable(what, f"{script} start: {exc}")
    if proc.returncode != 0:
        unavailable(what, f"{script} start exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    return proc, "already running" not in proc.stderr


def keep_services() -> bool:
    """WIREWISE_KEEP_SERVICES=1 leaves services running after the session (next start ~0.2 s)."""
    return os.environ.get("WIREWISE_KEEP_SERVICES") == "1"


class SharedUse:
    """Who uses a service folder: every session holds a shared flock on FOLDER/users.lock; the
    session that started the service stops it at the end only if it can then take the lock
    exclusively (no other session still holds it)."""

    def __init__(self, folder: Path) -> None:
        self._file = open(folder / "users.lock", "a+")  # noqa: SIM115 - held for the session
        fcntl.flock(self._file, fcntl.LOCK_SH)

    def release_and_check_alone(self) -> bool:
        fcntl.flock(self._file, fcntl.LOCK_UN)
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True

    def others(self) -> bool:
        """Whether another session holds the lock too (tried by upgrading ours, then back)."""
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            fcntl.flock(self._file, fcntl.LOCK_SH)
        return False

    def close(self) -> None:
        self._file.close()
