"""The lines of a text file as people save logs: read a piece at a time, in any encoding.

Memory is bounded by CHUNK_BYTES and MAX_LINE_CHARS whatever the file's size: the file is
never held whole (issue 29: a 20 MB nccl-tests log held 1.3 GB when read whole, split into
lines and tokens at once).

Encodings, as the file's first bytes say:
- a byte-order mark: UTF-8 (`\\xef\\xbb\\xbf`, Notepad and PowerShell 7's utf8BOM), UTF-16
  (`\\xff\\xfe`, Windows PowerShell 5's `>` and `Out-File`), UTF-32; the mark is not part of
  the text, so a copy saved with it reads exactly as the copy without;
- UTF-16 without a mark: NUL in every other byte of the first chunk (ASCII text encoded so);
- anything else: lines of bytes, each decoded as UTF-8, and where a line is not UTF-8 (a
  host or GPU name written in Latin-1 or cp1252, a log cut mid-character) as Latin-1, which
  decodes any byte: one bad line never makes the rest unreadable.
A mark in the middle of the text (files with marks concatenated) is dropped the same way.

Numbering: lines are counted at `\\n`, as editors number them; a line that a lone `\\r` or
another Unicode line break divides (a progress bar's carriage returns) is yielded as its
pieces, each with the line's number. A line longer than MAX_LINE_CHARS is skipped whole and
named in `long_lines` (no log line is near it: nccl-tests' widest lines are ~200 characters)."""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from pathlib import Path

from wirewise.limits import open_bounded

CHUNK_BYTES = 1 << 20
MAX_LINE_CHARS = 1 << 20
BOMS = [  # longest first: UTF-32-LE's mark begins with UTF-16-LE's
    (codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"),
]
BOM = "\ufeff"


class LogText:
    """The numbered lines of one file (`lines()` may be called again: each call reads it anew)."""

    def __init__(self, path: str | Path, max_bytes: int):
        self.path, self.max_bytes = Path(path), max_bytes
        self.encoding: str | None = None  # found on the first read
        self.long_lines: list[int] = []

    def lines(self) -> Iterator[tuple[int, str]]:
        """(line number, text) of every line; OSError as wirewise.limits.read_bounded."""
        self.long_lines = []
        with open_bounded(self.path, self.max_bytes) as fh:
            head = fh.read(CHUNK_BYTES)
            self.encoding, skip = _encoding(head)
            head = head[skip:]
            wide = self.encoding not in ("utf-8", None)
            lines = _wide_lines(fh, head, self.encoding) if wide else _byte_lines(fh, head)
            for number, line in enumerate(lines, start=1):
                if line is None:
                    self.long_lines.append(number)
                    continue
                for piece in line.replace(BOM, "").splitlines() or [""]:
                    yield number, piece


def _encoding(head: bytes) -> tuple[str | None, int]:
    """(encoding, bytes of mark to skip): a mark's encoding, UTF-16 where every other byte of
    the head is NUL, else None (UTF-8 line by line, Latin-1 where a line is not UTF-8)."""
    for mark, name in BOMS:
        if head.startswith(mark):
            return name, len(mark)
    sample = head[:4096]
    if len(sample) >= 4:
        even, odd = sample[0::2], sample[1::2]
        if odd.count(0) > 0.9 * len(odd) and even.count(0) < 0.1 * len(even):
            return "utf-16-le", 0
        if even.count(0) > 0.9 * len(even) and odd.count(0) < 0.1 * len(odd):
            return "utf-16-be", 0
    return None, 0


def _byte_lines(fh, head: bytes) -> Iterator[str | None]:
    """Each `\\n`-line decoded on its own (None: too long to be a log line)."""
    buffer, start = head, 0
    while True:
        cut = buffer.find(b"\n", start)
        if cut >= 0:
            yield _decode(buffer[start:cut])
            start = cut + 1
            continue
        if len(buffer) - start > MAX_LINE_CHARS:
            yield None
            rest = _skip_line(fh)
            if rest is None:
                return
            buffer, start = rest, 0
            continue
        more = fh.read(CHUNK_BYTES)
        if not more:
            if start < len(buffer):
                yield _decode(buffer[start:])
            return
        buffer, start = buffer[start:] + more, 0


def _skip_line(fh) -> bytes | None:
    """Read past the rest of an over-long line; what follows its `\\n` (None: the file ended)."""
    while chunk := fh.read(CHUNK_BYTES):
        cut = chunk.find(b"\n")
        if cut >= 0:
            return chunk[cut + 1 :]
    return None


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _wide_lines(fh, head: bytes, encoding: str) -> Iterator[str | None]:
    """`\\n`-lines of a UTF-16 or UTF-32 file, decoded a chunk at a time (None: too long)."""
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    pending, chunk, skipping = "", head, False
    while True:
        final = not chunk
        pending += decoder.decode(chunk, final=final)
        *whole, pending = pending.split("\n")
        for line in whole:
            if skipping:
                skipping = False
                continue
            yield None if len(line) > MAX_LINE_CHARS else line
        if len(pending) > MAX_LINE_CHARS:
            if not skipping:
                yield None
            pending, skipping = "", True
        if final:
            if pending and not skipping:
                yield pending
            return
        chunk = fh.read(CHUNK_BYTES)
