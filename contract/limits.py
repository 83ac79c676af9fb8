"""The bounds every input is held to, in one place (docs/contracts.md, "Bounds").

A count is checked before anything is expanded from it, a file before it is read: a number
typed by mistake (`repeats: 10^23`) or a path to something that never ends (/dev/zero, a
FIFO) is refused with the bound in the message, instead of exhausting memory or hanging.

The figures: integers are what the database stores (SQLite INTEGER and PostgreSQL BIGINT
are signed 64-bit); the largest Slurm clusters run tens of thousands of GPUs, one campaign
task at most MAX_RANKS of them; result files of 146 MB were collected in the field, so a
result file may be 1 GiB; a spec, a topology text and a model config are a few KB.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

from wirewise.units import GIB, KIB, MIB, bytes_text

MAX_INT = 2**63 - 1  # any stored integer: bytes, count, GPU count, ...
MAX_RANKS = 65_536  # GPUs (or ranks) of one task or one --gpus, over all its nodes
MAX_GPU_INDEX = 1023  # a GPU's index on its node (wirewise.ranges: --free, --gpus 0-3, Slurm's GRES)
MAX_CPU_ID = 65_535  # a CPU's id in an affinity list (Linux's NR_CPUS is at most 8192)
MAX_ARRAY_INDEX = 4_000_000  # a Slurm array index (MaxArraySize may not exceed 4,000,001, slurm.conf(5))
MAX_CPU_RANKS = 256  # CPU ranks (gloo) of one task on one machine
MAX_NODES = 65_536  # nodes of one multi-node task: more than any cluster has
MAX_REPEATS = 10_000  # axes.repeats
MAX_ITERATIONS = 1_000_000_000  # iterations or steps of one benchmark (per size for collectives): nccl-tests runs use 20 to a few thousand, soak runs millions (a task's timeout ends them)
MAX_TASKS = 100_000  # tasks one campaign plans
MAX_NESTING = 100  # levels of mappings and lists in a spec, a result file or a config
MAX_TIME_MIN = 365 * 24 * 60  # a Slurm time limit or a task timeout: a year, past any partition's MaxTime
MAX_AGE_DAYS = 100 * 366  # --since as an age
MAX_INTERVAL_S = 24 * 3600  # seconds between polls (campaign status --watch)

MAX_SPEC_BYTES = 1 * MIB  # a campaign spec (YAML)
MAX_TOPOLOGY_BYTES = 1 * MIB  # a saved `nvidia-smi topo -m`
MAX_CONFIG_BYTES = 16 * MIB  # a transformers config.json
MAX_RESULT_BYTES = 1 * GIB  # a result.json
MAX_LOG_BYTES = 1 * GIB  # an nccl-tests log (read a line at a time: wirewise.orchestrator.record.log_text)
MAX_SMALL_FILE_BYTES = 64 * KIB  # outcome.json, local.pid, plan.json's first read


def read_bounded(path: str | Path, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most `max_bytes` ('-': stdin, read to the bound).

    Raises OSError as open() would (FileNotFoundError, IsADirectoryError, PermissionError),
    and also for what is not a regular file (a FIFO would block the read, a device such as
    /dev/zero never ends) or is larger than the bound; strerror says which, so a caller's
    `except OSError` message stays one clear line."""
    if str(path) == "-":
        data = sys.stdin.buffer.read(max_bytes + 1)
    else:
        with _open_regular(path) as fh:
            _check_size(fh, path, max_bytes)
            data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:  # stdin, or a file that grew while read
        raise _too_large(path, max_bytes)
    return data


@contextmanager
def open_bounded(path: str | Path, max_bytes: int) -> Iterator[BinaryIO]:
    """A regular file of at most `max_bytes`, open for reading a piece at a time (OSError as
    read_bounded); reading past the bound (a file that grows while read) raises it too."""
    with _open_regular(path) as fh:
        _check_size(fh, path, max_bytes)
        yield _Bounded(fh, path, max_bytes)


class _Bounded:
    """A binary file whose reads stop with OSError past `max_bytes`."""

    def __init__(self, fh, path: str | Path, max_bytes: int):
        self.fh, self.path, self.max_bytes, self.left = fh, path, max_bytes, max_bytes

    def read(self, size: int) -> bytes:
        data = self.fh.read(size)
        self.left -= len(data)
        if self.left < 0:
            raise _too_large(self.path, self.max_bytes)
        return data


def check_bounded(path: str | Path, max_bytes: int) -> None:
    """What read_bounded would refuse of a file (OSError alike), found without reading it: a
    caller that reads many files checks them all before it acts on the first."""
    with _open_regular(path) as fh:
        _check_size(fh, path, max_bytes)


def _check_size(fh, path: str | Path, max_bytes: int) -> None:
    if os.fstat(fh.fileno()).st_size > max_bytes:
        raise _too_large(path, max_bytes)


def _too_large(path: str | Path, max_bytes: int) -> OSError:
    return OSError(errno.EFBIG, f"larger than {bytes_text(max_bytes, 'bound')}, the bound for this input", str(path))


def cannot_read(what: str, path: str | Path, exc: OSError):
    """The UserError for a file a person named that cannot be read (read_bounded's OSError):
    one wording for every such file, JSON (read_json) or YAML (wirewise.yamlfile)."""
    from wirewise.errors import UserError

    return UserError(f"cannot read {what} {str(path)!r}: {exc.strerror}")


def read_head(path: str | Path, max_bytes: int) -> bytes:
    """The first `max_bytes` of a regular file (OSError as read_bounded, but never for its size)."""
    with _open_regular(path) as fh:
        return fh.read(max_bytes)


def _open_regular(path: str | Path):
    """A regular file opened for reading. Opened non-blocking, then checked by fstat, so a FIFO
    without a writer is refused instead of waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    fh = os.fdopen(fd, "rb")
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode):
        return fh
    fh.close()
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a folder", str(path))
    raise OSError(errno.EINVAL, "not a regular file: a FIFO, a device or a socket", str(path))


def nesting(doc: Any, limit: int = MAX_NESTING) -> int:
    """How deep mappings and lists nest in a parsed document (a scalar: 0), counted until
    `limit` is passed (then limit + 1). Each container is visited once: YAML aliases make
    a document a graph, and a billion laughs must not be walked a billion times."""
    deepest, seen = 0, set()
    stack = [(doc, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, (dict, list, tuple)) or id(item) in seen:
            continue
        seen.add(id(item))
        deepest = max(deepest, depth)
        if deepest > limit:
            return limit + 1
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list, tuple)))
    return deepest


def too_deep(doc: Any) -> str | None:
    """Why a parsed document is refused for its nesting (past MAX_NESTING), or None."""
    return TOO_DEEP if nesting(doc) > MAX_NESTING else None


# One wording, whether the walk above or a parser's own depth limit (past ours) caught it.
TOO_DEEP = f"nested deeper than {MAX_NESTING} levels, the bound for a document"


def read_json(path: str | Path, what: str, max_bytes: int, fix: str, lines: bool = False) -> Any:
    """The JSON document in a file a person named (a result file, a baselines file, a model
    config): a regular file of at most `max_bytes` (read_bounded), nested at most MAX_NESTING
    levels (Python's parser would otherwise raise RecursionError near 1,000). Each way it fails
    is one UserError that names the file: `what` it is where it cannot be read (cannot_read),
    and `fix` (what to give instead) where it is not JSON or nests too deep. With `lines`, JSON
    lines are read too (one value per line, as .jsonl files hold them): the values come back as
    a JsonLines list, one document as itself."""
    import json

    from wirewise.errors import UserError

    try:
        text = read_bounded(path, max_bytes)
    except OSError as exc:
        raise cannot_read(what, path, exc) from None
    try:
        try:
            doc = json.loads(text)
        except ValueError as exc:
            if not (lines and str(exc).startswith("Extra data")):
                raise
            doc = JsonLines(json.loads(line) for line in text.splitlines() if line.strip())
        problem = too_deep(doc)
    except RecursionError:
        problem = TOO_DEEP
    except ValueError as exc:  # bad JSON or UTF-8
        raise UserError(f"{path}: not JSON ({str(exc).splitlines()[0]}); {fix}") from None
    if problem:
        raise UserError(f"{path}: {problem}; {fix}")
    return doc


class JsonLines(list):
    """The values of a JSON-lines file, one per line (read_json with `lines`)."""
