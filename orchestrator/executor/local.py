"""The local executor: the submitting process runs the elements itself, one after another, on
this machine (`campaign submit --executor local`, `make demo`).

Each element's id names that process: `local:PID:START:DIGEST`, START its start time from
/proc/PID/stat (clock ticks since boot) and DIGEST 8 hex digits of sha256 over this host's
name and the process's command line. A process id is reused once its process is gone; the
three together are not. So a state or a cancel acts only on the very run that took the
elements: a run killed with -9 (or an id planted in the database) reads as ended, and nothing
else is ever signalled.
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from wirewise.orchestrator.executor.core import ENDED, RUNNING, Elements, JobRequest, Node, OnSubmitted, Scope, Submitted


class LocalExecutor:
    name: ClassVar[str] = "local"
    runs_here: ClassVar[bool] = True

    def parameters(self, request: JobRequest) -> dict[str, Any]:
        return {}

    def array_limit(self, dry_run: bool = False) -> int | None:
        return None

    def submit(self, request: JobRequest, fn: Callable, elements: Elements,
               on_submitted: OnSubmitted | None = None, until: Callable[[Any], bool] | None = None) -> Submitted:
        submitted = Submitted(None, [process_id(os.getpid())] * len(elements))
        if on_submitted is not None:
            on_submitted(submitted)
        for args in elements:
            result = fn(*args)
            if until is not None and until(result):
                break
        return submitted

    def states(self, elements: list[str | None]) -> dict[str | None, str]:
        """RUNNING while the process that took the element lives; ENDED once it is gone (or
        for an element without an id: recorded before ids were)."""
        return {element: RUNNING if element and _alive(element) else ENDED for element in set(elements)}

    def allocation_problems(self, elements: list[str]) -> dict[str, str]:
        """Everything runs here: nothing was placed by a scheduler."""
        return {}

    def cancel(self, elements: list[str]) -> dict[str, Any]:
        """SIGTERM to the run that took these elements, if it still is that run: its task ends
        `cancelled` and the rest do not start."""
        for element in sorted(set(elements)):
            if _alive(element):
                pid = int(element.split(":")[1])
                os.kill(pid, signal.SIGTERM)
                return {"stopped_local_run": pid}
        gone = f": the run with pid {elements[0].split(':')[1]} is gone" if elements else ""
        return {"cancelled_arrays": [], "note": f"no local run is going{gone}"}

    def nodes(self, scope: Scope) -> list[Node] | None:
        """None: it runs on this machine, there are no nodes to choose."""
        return None


def process_id(pid: int) -> str | None:
    """local:PID:START:DIGEST for a live process; None where /proc does not tell (not Linux)."""
    found = _identity(pid)
    return f"local:{pid}:{found[0]}:{found[1]}" if found else None


def _identity(pid: int) -> tuple[str, str] | None:
    """(start time, digest) of a live process, not a zombie; None otherwise."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # the name in parentheses may hold spaces
    if len(fields) < 20 or fields[0] == "Z":
        return None
    digest = hashlib.sha256(socket.gethostname().encode() + b"\0" + command).hexdigest()[:8]
    return fields[19], digest  # field 22 of stat(5), starttime; fields[0] is field 3


def _alive(element: str) -> bool:
    parts = element.split(":")
    if len(parts) != 4 or parts[0] != "local" or not parts[1].isdigit():
        return False
    return _identity(int(parts[1])) == (parts[2], parts[3])
