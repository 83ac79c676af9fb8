"""Reading a log: its text, a line at a time, into sections (one per run) holding their rows.

Sections. A file holds any number of runs (cluster scripts run every `*_perf` into one log;
READMEs paste several). A run begins at its version, op or settings line, or at rank lines or
a header that follow another run's rows, footer or failure; each section has its own op, rank
lines, rows and footer, so the rank lines of a failed run never join the next one. Rows whose
sweep starts again (a size not above the last) after a blank line or a heading (`====== 2-node
======`) are another run's: an excerpt of several runs with no header of their own. Repeated
runs and quoted excerpts are marked by identity.mark_repeats.

Pasted text. Lines are read as tokens, so indentation, Markdown fences, `$ mpirun ...`
commands, `...` elisions, ssh warnings, NCCL INFO lines anywhere (also between the header and
the rows), shell traces and prose around the table do not matter. `mpirun --tag-output`
prefixes (`[1,0]<stdout>:`) and `srun --label` prefixes (`0: `) are stripped; where the
outputs of two ranks interleave mid-line, the line is split at the tag, and a row cut that way
is joined with its continuation when the pieces make a whole row, else skipped with a warning
naming its line. Markdown that ate a leading `#` (rank and settings lines) is read the same.

Streaming: only each run's rows and its own lines' facts are kept (hosts, GPU names, headers
and settings shared between runs: one object each however many runs print them), never the text.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from wirewise.nccl_info import VERSION_LINE
from wirewise.orchestrator.record.nccl_tests.commands import MAX_COMMAND_CHARS, PROMPT, Command, command_of
from wirewise.orchestrator.record.nccl_tests.identity import mark_repeats
from wirewise.orchestrator.record.nccl_tests.rows import MAX_DIGITS, is_continuation, looks_like_row
from wirewise.orchestrator.record.nccl_tests.sections import Device, Section
from wirewise.versions import decode_nccl_version

_TAG = re.compile(r"\[\d+,\d+\]<std(?:out|err)>:")  # mpirun --tag-output
_LABEL = re.compile(r"^\d+:\s")  # srun --label
# nccl-tests and rccl-tests since 2.17: `# rccl-tests version 2.17.9-x rccl-headers=22803 rccl-library=22803`;
# rccl-tests before: `rccl-tests: Version develop:5272cd1` (after the settings line)
_VERSION = re.compile(
    r"^#?\s*(?P<tests>[nr]ccl-tests)(?:\s+version|:\s*Version)\s+(?P<version>\S+)(?:.*?[nr]ccl-library=(?P<library>\d+))?", re.I
)
_RCCL_LINE = re.compile(r"\bRCCL version\s*:\s*(\S+)")  # RCCL's own banner (NCCL_DEBUG=VERSION or INFO)
_STARTING = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_CONCLUDED = re.compile(r"^#\s*Collective test concluded")
_SETTINGS = re.compile(r"^#?\s*nThread\s+\d+\s+nGpus\s+\d+")
_DEVICE = re.compile(
    r"^#?\s*Rank\s+(?P<rank>\d{1,9})\s+(?:Group\s+\d+\s+)?(?:Pid\s+(?P<pid>\d{1,18})\s+)?on\s+(?P<host>\S+)\s+"
    r"device\s+(?P<device>\d{1,9})\s+\[(?P<bus>[^\]]*)\](?:\s+(?P<name>.+?))?\s*$"
)
_HEADER = re.compile(r"^#?\s*size\s+count\s+type\b")
_AVERAGE = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")
_BOUNDS = re.compile(r"^#?\s*Out of bounds values\s*:\s*(\d{1,18})\s+(OK|FAILED)")
# The host is at most 255 characters (a DNS name's bound): unbounded, the search backtracked
# over every start of a long line without spaces, quadratic in its length (a 100 KB line: minutes).
_FAILURE = re.compile(r"(?:(?P<host>[^\s:]{1,255}):\s+)?Test (?:NCCL |CUDA )?failure (?P<where>\S+) '(?P<why>[^']*)")
_FAILURE_TRACE = re.compile(r"^\.\.\s+\S+\s+pid\s+\d+:\s+Test failure")
# Terminal control sequences (ANSI CSI/OSC) and other control characters: never part of a
# host or GPU name, and a log may carry them (colourised srun output, or a hostile file).
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|[\x00-\x1f\x7f-\x9f]")
_ENV_LINE = re.compile(r"NCCL INFO (NCCL_\w+) set by environment to (\S+?)\.?\s*$")
_SETTING_FIELDS = {
    "nthread": r"nThread\s+(\d+)", "ngpus": r"nGpus\s+(\d+)", "min_bytes": r"minBytes\s+(\d+)",
    "max_bytes": r"maxBytes\s+(\d+)", "step_factor": r"step:\s*(\d+)\(factor\)", "step_bytes": r"step:\s*(\d+)\(bytes\)",
    "warmup": r"warmup iters:\s*(\d+)", "iters": r"(?<!warmup )(?<!agg )iters:\s*(\d+)", "agg_iters": r"agg iters:\s*(\d+)",
    "validation": r"validation:\s*(\d+)", "graph": r"graph:\s*(\d+)",
}
_BOILERPLATE = ("size", "(B)", "out-of-place", "Using", "Collective", "Out", "Rank", "Errors")


def _pieces(lines: Iterable[tuple[int, str]]):
    """(line number, text) of every line with launcher tags stripped; a line where another
    rank's tagged output starts mid-line is split there, each piece keeping the line's number."""
    for number, raw in lines:
        line = raw.strip()
        while prefix := _TAG.match(line) or _LABEL.match(line):  # possibly stacked: a tag, then a label
            line = line[prefix.end() :].lstrip()
        for piece in _TAG.split(line):
            yield number, piece.strip()


def numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines of a text already in memory, numbered as wirewise.orchestrator.record.log_text numbers a file's."""
    for number, line in enumerate(text.split("\n"), start=1):
        for piece in line.replace("\ufeff", "").splitlines() or [""]:
            yield number, piece


def parse_log(text: str | Iterable[tuple[int, str]]) -> list[Section]:
    """Sections with rows or a failure, in file order (rows not whole are in each section's
    `skipped`; repeats are marked in `repeats`). `text` is the log, or its numbered lines
    (log_text.LogText.lines()): a section's rows are kept, nothing else of the text."""
    return list(_read_runs(numbered_lines(text) if isinstance(text, str) else text))


def shows_settings(lines: Iterable[tuple[int, str]]) -> bool:
    """Whether the lines hold a run's settings line (`# nThread 1 nGpus 8 minBytes ...`), which
    every nccl-tests run prints first, before NCCL's INFO lines and its rows."""
    return any(_SETTINGS.match(line) for _, line in _pieces(lines))


class _Reader:
    """The state of reading one log: the run being read, and a command line awaiting its run."""

    def __init__(self):
        self.section = Section()
        self.pending_command: Command | None = None  # a command line's binary, for the run that follows it
        self.command_text = ""  # a command line continued with `\`
        self.done: list[Section] = []

    def start(self, number: int) -> Section:
        self.finish()
        self.section = Section(first_line=number, command=self.pending_command)
        self.pending_command = None
        return self.section

    def finish(self) -> None:
        section = self.section
        if section.has_rows or section.failure:
            section.read_rows()
            self.done.append(section)

    def read(self, number: int, line: str) -> None:
        if not line:
            self.section.gap = self.section.gap or self.section.has_rows
            return
        section, content = self.section, True  # content: a line of the run itself, not prose around it
        if "NCCL" in line:
            section.wire.read(line)
        if match := _VERSION.match(line):
            section = self.start(number) if section.has_body or section.version else section
            section.version, section.tests_name = match["version"], match["tests"].lower()
            if match["library"] and section.tests_name == "rccl-tests":  # rccl-library is RCCL's NCCL_VERSION_CODE
                section.rccl_version = section.rccl_version or decode_nccl_version(int(match["library"]))
            elif match["library"]:
                section.nccl_version = decode_nccl_version(int(match["library"]))
        elif match := _STARTING.match(line):
            section = self.start(number) if section.has_body or section.test else section
            section.test = match.group(1)
        elif _SETTINGS.match(line):
            section = self.start(number) if section.has_body or section.settings else section
            section.settings = _shared_dict(_settings(line))
        elif _CONCLUDED.match(line):
            section.concluded = True
        elif match := _DEVICE.match(line):
            if section.has_rows or section.closed or section.header:
                section = self.start(number)
            section.add_device(Device(int(match["rank"]), int(match["pid"]) if match["pid"] else None, _shared(match["host"]),
                                      int(match["device"]), _shared(match["bus"]), _shared(match["name"] or "")))
        elif _HEADER.match(line):
            if section.has_rows or section.closed:
                section = self.start(number)
            elif section.header is not None and section.header != line.lstrip("#").split():
                section.interleaved = section.interleaved or "two column headers follow each other"
            section.header = _shared_list(line.lstrip("#").split())
        elif match := _AVERAGE.match(line):
            if section.average_busbw is not None:
                section.interleaved = section.interleaved or "it prints two 'Avg bus bandwidth' lines"
            section.average_busbw = _float_or_none(match.group(1))
        elif match := _BOUNDS.match(line):
            section.bounds = (int(match.group(1)), match.group(2) == "OK")
        elif match := _FAILURE.search(line):
            section = self.start(number) if section.closed else section
            _read_failure(section, number, line, match)
        elif _FAILURE_TRACE.match(line):
            return  # the failure's call stack, after its first line
        elif match := _ENV_LINE.search(line):
            section.env[match.group(1)] = match.group(2)
            content = False
        elif match := _RCCL_LINE.search(line):
            section.rccl_version = section.rccl_version or _clean(match.group(1))
            content = False
        elif line.startswith("#"):
            content = False
            note = line.lstrip("# ").strip()
            if note and section.has_preamble and not section.has_rows and not line.startswith("##") \
                    and note.split()[0] not in _BOILERPLATE:
                section.notes.append(note)
        elif looks_like_row(tokens := line.split()):
            if section.closed or (section.gap and section.has_rows and int(tokens[0]) <= (section.last_size or 0)):
                section = self.start(number)  # a sweep that starts again after a gap: another run's excerpt
            section.add_candidate(number, tokens)
            section.gap = False
        elif is_continuation(tokens) and _joins(section, tokens):
            section.pending[1].extend(tokens)
        else:
            content = False
            self._prose(line, section)
        if content and not section.first_line:
            section.first_line = number

    def _prose(self, line: str, section: Section) -> None:
        """A line that is not the run's own: maybe a command line that ran the next run."""
        if "NCCL " not in line:
            section.gap = section.gap or section.has_rows
        if (match := VERSION_LINE.search(line)) and section.nccl_version is None:
            section.nccl_version = match.group(1)
        if line.endswith("\\"):  # a command continued on the next line
            if len(self.command_text) < MAX_COMMAND_CHARS:
                self.command_text += line[:-1] + " "
            return
        text, self.command_text = self.command_text + line, ""
        command = command_of(text)
        if command is None:
            if PROMPT.match(text):
                self.pending_command = None  # another command ran in between: the last one is not the next run's
            return
        if section.has_body:
            self.pending_command = command
        else:
            section.command = command


def _read_runs(lines: Iterable[tuple[int, str]]) -> list[Section]:
    reader = _Reader()
    for number, line in _pieces(lines):
        reader.read(number, line)
    reader.finish()
    mark_repeats(reader.done)
    return reader.done


def _read_failure(section: Section, number: int, line: str, match: re.Match) -> None:
    """The run's first failure line; what precedes the host on that line is a cut row."""
    if section.failure is None:
        why = match["why"].strip().removesuffix("/").strip()  # nccl-tests prints 'REASON / LAST ERROR'
        section.failure = _clean(f"{match.group(0)[: match.start('why') - match.start()]}{why}'")
        section.failure_line = number
    before = line[: match.start()].split()
    if before and looks_like_row(before):
        section.skip(f"line {number}: a row cut by the failure ({' '.join(before)})")


def _clean(text: str) -> str:
    return _CONTROL.sub("", text)


_SHARED: dict[Any, Any] = {}  # one header list and one settings dict for every run that prints the same


def _shared_list(words: list[str]) -> list[str]:
    if len(_SHARED) > 10_000:
        _SHARED.clear()
    return _SHARED.setdefault(tuple(words), words)


def _shared_dict(found: dict[str, int]) -> dict[str, int]:
    if len(_SHARED) > 10_000:
        _SHARED.clear()
    return _SHARED.setdefault(frozenset(found.items()), found)


def _shared(text: str) -> str:
    """Cleaned, and one string object per host, bus id and GPU name however many runs repeat it."""
    return sys.intern(_clean(text))


def _joins(section: Section, tokens: list[str]) -> bool:
    """Whether `tokens` can complete the section's last row: it is short of the header's columns."""
    if section.pending is None or section.header is None:
        return False
    last = section.pending[1]
    return len(last) < len(section.header) and len(last) + len(tokens) <= len(section.header)


def _float_or_none(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _settings(line: str) -> dict[str, int]:
    found = {}
    for key, pattern in _SETTING_FIELDS.items():
        if (match := re.search(pattern, line)) and len(match.group(1)) <= MAX_DIGITS:
            found[key] = int(match.group(1))
    return found
