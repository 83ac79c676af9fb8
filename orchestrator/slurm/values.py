"""The values wirewise hands Slurm, held to what Slurm accepts and to nothing a shell could act
on. submitit writes each one into its batch script as `#SBATCH --key='value'`: the quotes stop
spaces and `$(...)`, but a newline still ends the line, and what follows runs as a command on
the compute node (or, after `#SBATCH`, adds a directive). Slurm also expands `%j`, `%A`, ...
in --output paths, which hold the job's folder.

One pattern per kind of string, used by the campaign spec's fields and by every job request
(wirewise.orchestrator.executor.core.JobRequest checks itself when it is made):

    NAME        campaign names: letters, digits, '.', '_', '-'; at most 64
    JOB_NAME    job names (wirewise-NAME): the same, at most 128
    WORD        partition, account, qos, reservation: Slurm names, comma-separated
    CONSTRAINT  a --constraint expression: features joined by & | , [ ] * ( ) ! :
    NODELIST    a node list such as gpu[01-04],gpu07
    HOST        one node name (RFC 1123 labels, plus the underscores sites use)
    TIME        minutes, MM:SS, HH:MM:SS or D-HH[:MM[:SS]]
    FOLDER      a plain path: letters, digits, / . _ - ~ + @ = , and spaces; no '%'

and one range per number (NUMBERS), each stated with where it comes from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wirewise.errors import UserError
from wirewise.limits import MAX_NODES, MAX_TIME_MIN
from wirewise.ranges import GPU_INDICES


@dataclass(frozen=True)
class Pattern:
    regex: re.Pattern
    what: str  # "a Slurm node list such as gpu[01-04],gpu07": what a value should have been

    def problem(self, value: str) -> str | None:
        """Why `value` is refused (to follow the value in a message), or None."""
        if not isinstance(value, str) or not self.regex.fullmatch(value):
            return f"not {self.what}"
        return None

    def check(self, value: str, label: str) -> str:
        problem = self.problem(value)
        if problem:
            shown = value[:60] if isinstance(value, str) and len(value) > 200 else value
            raise UserError(f"{label} {shown!r}: {problem}")
        return value


@dataclass(frozen=True)
class NodeListPattern(Pattern):
    """A node list is also held to how many names it expands to (counted, never expanded):
    `gpu[01-99999999999]` would otherwise reach sbatch, which no cluster has the nodes for."""

    def problem(self, value: str) -> str | None:
        from wirewise.jobenv import host_count

        problem = super().problem(value)
        if problem is not None:
            return problem
        try:
            count = host_count(value)
        except UserError:  # brackets Slurm would refuse: gpu[01-03, gpu[5-3]
            return f"not {self.what}"
        return f"names more than {MAX_NODES:,} nodes" if count > MAX_NODES else None


def _pattern(regex: str, what: str) -> Pattern:
    return Pattern(re.compile(regex), what)


NAME = _pattern(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", "a name of letters, digits, '.', '_' and '-' (at most 64)")
JOB_NAME = _pattern(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", "a job name of letters, digits, '.', '_' and '-' (at most 128)")
WORD = _pattern(r"[A-Za-z0-9._-]+(,[A-Za-z0-9._-]+)*", "a Slurm name (letters, digits, '.', '_', '-', commas)")
CONSTRAINT = _pattern(r"[A-Za-z0-9._&|,*\[\]()!:-]+", "a Slurm --constraint expression (features joined by & | , [ ] *)")
NODELIST = NodeListPattern(re.compile(r"[A-Za-z0-9._,\[\]-]+"), "a Slurm node list such as gpu[01-04],gpu07")
HOST = _pattern(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,252})",
                "a Slurm host name (letters, digits, '.', '-' and '_', starting with a letter or digit)")
TIME = _pattern(r"(\d{1,6}-)?\d{1,9}(:\d{1,2}){0,2}", "a Slurm time limit: minutes, MM:SS, HH:MM:SS or D-HH[:MM[:SS]]")
# Slurm expands '%' in --output and --error (sbatch(1), "filename pattern"), and submitit puts the
# folder there: a '%' would send the logs elsewhere. \w takes unicode letters and digits.
FOLDER = _pattern(r"[\w./~+@=, -]+", "a plain path (letters, digits, / . _ - ~ + @ = , and spaces; Slurm expands '%' in log paths)")


@dataclass(frozen=True)
class Range:
    smallest: int
    largest: int
    why: str

    def check(self, value: Any, label: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not self.smallest <= value <= self.largest:
            raise UserError(f"{label} {value!r}: give a whole number from {self.smallest} to {self.largest:,} ({self.why})")
        return value


# Slurm keeps CPU and task counts in 16 bits, 0xfffe and 0xffff meaning "not set" and "infinite".
_SIXTEEN_BITS = 0xFFFD
NUMBERS = {
    "time_min": Range(1, MAX_TIME_MIN, "minutes; a year at most, past any partition's MaxTime"),
    "nodes": Range(1, MAX_NODES, "more than any cluster has"),
    "segment": Range(1, MAX_NODES, "nodes per segment; more than any cluster has"),
    "tasks_per_node": Range(1, _SIXTEEN_BITS, "Slurm's limit"),
    "cpus_per_task": Range(1, _SIXTEEN_BITS, "Slurm's limit"),
    "gpus_per_node": Range(1, GPU_INDICES.largest + 1, "no node has more"),
    "parallelism": Range(1, 4_000_001, "Slurm's largest MaxArraySize"),
}
STRINGS = {"name": JOB_NAME, "partition": WORD, "account": WORD, "qos": WORD, "constraint": CONSTRAINT,
           "nodelist": NODELIST, "exclude": NODELIST, "folder": FOLDER, "reservation": WORD}


def check_values(values: Mapping[str, Any], labels: Mapping[str, str] | None = None) -> None:
    """Every value given (None: not set) against its pattern or range; one UserError line naming
    the first bad one by its label (the option or spec field a person wrote) or its name."""
    labels = labels or {}
    for key, value in values.items():
        if value is None:
            continue
        label = labels.get(key, key)
        if key in NUMBERS:
            NUMBERS[key].check(value, label)
        elif key in STRINGS:
            STRINGS[key].check(str(value), label)
        else:
            raise ValueError(f"no rule for the job value {key!r}")  # a new field needs its rule here
