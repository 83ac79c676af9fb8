"""Write a file so readers see all of it or none of it (rename is atomic on POSIX), the one way
wirewise writes a file a person or a job reads (reports, configs, exports, plans, outcomes).

Only a regular file (or a name not taken yet) is written that way. A path that is a device, a
FIFO or a socket (`--out /dev/null`, a named pipe, /dev/stdout) is written to as it is: renaming
a temporary file over it would replace it (as root, /dev/null itself became a regular file). A
folder is refused. A symbolic link is followed: the file it names is the one replaced.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any


def write_json_atomic(path: Path, obj: Any) -> None:
    write_text_atomic(path, json_text(obj, indent=1))


def json_text(obj: Any, **options: Any) -> str:
    """Strict JSON (RFC 8259: a NaN or infinite figure, stored before the store refused them, as
    null), every time in ISO 8601 with its zone (one without is UTC: SQLite gives stored times back
    without it), anything else JSON lacks as its text. The one encoder of what wirewise writes and
    prints as JSON."""
    try:
        return json.dumps(obj, default=_json_value, allow_nan=False, **options)
    except ValueError:
        return json.dumps(_finite(obj), default=_json_value, allow_nan=False, **options)


def _finite(obj: Any) -> Any:
    import math

    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {key: _finite(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(value) for value in obj]
    return obj


def _json_value(value: Any) -> Any:
    from datetime import datetime

    if isinstance(value, datetime):
        from wirewise.clock import as_utc

        return as_utc(value).isoformat()
    return str(value)


def write_text_atomic(path: Path, text: str) -> None:
    """`text` into `path`, with the permissions a plain open() would give (mkstemp's are 0600);
    into a device, FIFO or socket as a stream. UserError for a folder, or a FIFO nobody reads."""
    path = Path(os.path.realpath(path))
    kind = _kind(path)
    if kind == "folder":
        from wirewise.errors import UserError

        raise UserError(f"{path} is a folder: give a file name")
    if kind == "stream":
        _write_stream(path, text)
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _kind(path: Path) -> str:
    """'file' (a regular file, or nothing there yet), 'folder', or 'stream' (anything else)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "file"
    if stat.S_ISREG(mode):
        return "file"
    return "folder" if stat.S_ISDIR(mode) else "stream"


def _write_stream(path: Path, text: str) -> None:
    """Write to a device or FIFO as it is (never created, never truncated: it has no content to
    replace). A FIFO is opened without waiting, so one nobody reads is refused, not hung on."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno != errno.ENXIO:
            raise
        from wirewise.errors import UserError

        raise UserError(f"{path} is a FIFO that nobody reads: start its reader first") from None
    os.set_blocking(fd, True)
    with os.fdopen(fd, "wb") as fh:
        fh.write(text.encode("utf-8"))


def _umask() -> int:
    mask = os.umask(0)  # the only way to read it; set straight back
    os.umask(mask)
    return mask
