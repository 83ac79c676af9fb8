"""The two kinds of files measurements are stored from, told apart by their first lines, so that
each command reads its own kind and names the other's command when handed it.

- wirewise result files, stored by `wirewise collect`: a task's result.json (one JSON document
  with its `records` and wiring) or result records as JSON lines (one record a line, as
  `tests/fixtures/measured-2xh200/*.jsonl` hold them). In a folder, collect takes every
  result.json and every `*.jsonl` whose first line is a result record; a run's progress.jsonl
  and other JSON-lines files (training data) are not result records and stay where they are.
- nccl-tests logs, stored by `wirewise import nccl-tests`: the text an `*_perf` run prints, in
  any version, pasted or not, in any encoding (wirewise.orchestrator.record.nccl_tests).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from wirewise.limits import MAX_LOG_BYTES, open_bounded
from wirewise.orchestrator.record.log_text import BOMS, LogText

# Read to tell a file's kind: a result record's line is ~2 KB (tests/fixtures/measured-2xh200);
# an nccl-tests run prints its settings line first, and its rows within a megabyte unless
# NCCL_DEBUG=INFO printed ~50 lines for each of many ranks before them.
HEAD_BYTES = 1 << 20
HEAD_CHARS = 1 << 20
LOGS_LOOKED_AT = 20  # files of a folder without result files that are looked at for nccl-tests logs


def is_result_record(value: Any) -> bool:
    """One result record (a line of a JSON-lines file), not a result.json's document of them."""
    return isinstance(value, dict) and "workload" in value and "records" not in value


def starts_as_json(path: Path) -> bool:
    """Whether the file's text begins as a JSON object or list does (a byte-order mark and
    blanks before it allowed): what every result file does and no nccl-tests log."""
    return _text_head(path, 4096).lstrip()[:1] in ("{", "[")


def looks_like_result_file(path: Path) -> bool:
    """Begins as JSON and names a result file's keys (`records`, or a record's `workload`) in
    its first HEAD_BYTES: what `import nccl-tests` tells a result file handed to it by."""
    head = _text_head(path, HEAD_BYTES)
    return head.lstrip()[:1] in ("{", "[") and ('"records"' in head or '"workload"' in head)


def _text_head(path: Path, size: int) -> str:
    """The first `size` bytes as text, decoded as their byte-order mark says (else UTF-8); '' where unreadable."""
    try:
        with open_bounded(path, MAX_LOG_BYTES) as fh:
            head = fh.read(size)
    except OSError:
        return ""
    encoding = next((name for mark, name in BOMS if head.startswith(mark)), None)
    return head.decode(encoding, "ignore").lstrip("\ufeff") if encoding else head.decode("utf-8", "ignore")


def holds_result_records(path: Path) -> bool:
    """A JSON-lines file whose first line is a result record (a file that cannot be read is not).
    Read a few KB at a time up to the first line's end: a campaign folder has a progress.jsonl
    in each of its runs."""
    try:
        with open_bounded(path, MAX_LOG_BYTES) as fh:
            first = b""
            while b"\n" not in first and len(first) < HEAD_BYTES and (more := fh.read(4096)):
                first += more
        return is_result_record(json.loads(first.split(b"\n", 1)[0]))
    except (OSError, ValueError):
        return False


def is_nccl_tests_log(path: Path) -> bool:
    """Whether the file's first HEAD_CHARS of text hold an nccl-tests run: its rows or its
    failure, as `import nccl-tests` reads one, or its settings line (a run whose NCCL INFO lines
    push its rows further). A line that only names nccl-tests is not one."""
    from wirewise.orchestrator.record.nccl_tests import parse_log
    from wirewise.orchestrator.record.nccl_tests.reader import shows_settings

    text = LogText(path, MAX_LOG_BYTES)
    try:
        return bool(parse_log(_head(text))) or shows_settings(_head(text))
    except OSError:
        return False


def _head(text: LogText) -> Iterator[tuple[int, str]]:
    read = 0
    for number, line in text.lines():
        read += len(line) + 1
        if read > HEAD_CHARS:
            return
        yield number, line


def nccl_tests_logs_in(files: list[Path]) -> list[Path]:
    """nccl-tests logs among the first LOGS_LOOKED_AT of `files` that are not JSON: what
    `collect` names when a folder holds no result file."""
    candidates = [p for p in files if p.is_file() and not p.name.startswith(".") and not starts_as_json(p)]
    return [p for p in candidates[:LOGS_LOOKED_AT] if is_nccl_tests_log(p)]
