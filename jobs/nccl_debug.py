"""NCCL's INFO lines, written where the supervisor reads them and nowhere a user looks.

Where the user set neither NCCL_DEBUG nor NCCL_DEBUG_FILE, every rank runs with NCCL_DEBUG=INFO
into NCCL_DEBUG_FILE in the run folder (`nccl-rank<N>.log`), so NCCL prints to that file, not to
the rank's output (the rank log a failure's message quotes) or a terminal. A user's own setting
is kept and read where it sends the lines: their NCCL_DEBUG_FILE, else the rank's log (NCCL
prints to stdout), so the NCCL warnings they asked for stay where they look. NCCL opens the
file itself (line-buffered) and expands %h (the host name to its first dot) and %p (the rank's
pid) in it (NVIDIA/nccl src/debug.cc); the supervisor, which started the rank and knows its
pid, does the same to find it. After the ranks end, it reads each file
(wirewise.nccl_info.read_wire) into the rank's file, so node 0 sees every node's ranks
(wirewise.jobs.supervise).

A user's NCCL_DEBUG below INFO (WARN, VERSION) or NCCL_DEBUG_SUBSYS without INIT leaves the
connection lines out: the transport carried is then unknown (null), never guessed.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from wirewise.nccl_info import read_wire
from wirewise.runs import RunPaths

MTIME_SLACK_S = 2.0  # file systems that keep modification times to the second (some NFS) still pass


def debug_env(env: dict[str, str], run_dir: Path, rank: int) -> dict[str, str]:
    """What one rank's environment gains: INFO into the run folder where the user set neither
    NCCL_DEBUG nor NCCL_DEBUG_FILE; nothing where they did (their setting holds)."""
    if env.get("NCCL_DEBUG") or env.get("NCCL_DEBUG_FILE"):
        return {}
    return {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_FILE": str(RunPaths(run_dir).nccl_debug(rank))}


def lines_of(env: dict[str, str], rank_log: Path, pid: int) -> Path:
    """Where a rank's NCCL lines go with its environment `env`: NCCL_DEBUG_FILE (expanded), else
    the rank's own log (NCCL prints to stdout)."""
    return debug_file(env["NCCL_DEBUG_FILE"], pid) if env.get("NCCL_DEBUG_FILE") else rank_log


def debug_file(pattern: str, pid: int, host: str | None = None) -> Path:
    """The file NCCL writes for NCCL_DEBUG_FILE=`pattern` in the process `pid` (its %h, %p, %% expanded)."""
    host = (host or socket.gethostname()).split(".")[0]
    out, k = [], 0
    while k < len(pattern):
        if pattern[k] == "%" and k + 1 < len(pattern):
            out.append({"h": host, "p": str(pid), "%": "%"}.get(pattern[k + 1], pattern[k:k + 2]))
            k += 2
        else:
            out.append(pattern[k])
            k += 1
    return Path("".join(out))


def read_debug_file(path: Path, since: float) -> dict[str, Any] | None:
    """What one rank's NCCL INFO file says the wire carried (wirewise.nccl_info.Wire as JSON); None
    without one, or with one last written before the rank started (`since`, a time.time()): a
    user's fixed NCCL_DEBUG_FILE left by an earlier run, or a gloo run's, which NCCL never opened."""
    try:
        if path.stat().st_mtime < since - MTIME_SLACK_S:
            return None
        with open(path, errors="replace") as fh:
            return read_wire(fh).to_json()
    except OSError:
        return None
