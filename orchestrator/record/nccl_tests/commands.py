"""A command line in the log that runs one `*_perf` binary, read for what it says of the run
that follows it.

A line that runs one `*_perf` binary (maybe continued with a backslash) belongs to the run that
follows it: its binary names the op; the recorded variables set on it (`NCCL_P2P_DISABLE=1
CUDA_VISIBLE_DEVICES=2,3 ./all_reduce_perf`, `mpirun -x K=V`, `srun --export=`) are the run's
environment, which sets its transport (options.HowItRan) and maps its devices to GPUs (device
0 of CUDA_VISIBLE_DEVICES=2,3 is GPU 2); its `-g`/`-t` and a launcher's process count
(`mpirun -np`, `srun -n`; none: one process) give the rank count where nothing else does. A
prompt line running something else in between (`$ egrep ...`) ends its claim (the reader).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wirewise.jobenv import visible_indices
from wirewise.orchestrator.record.nccl_tests.rows import MAX_DIGITS
from wirewise.record import RECORDED_ENV_PREFIXES

_BINARY = re.compile(r"(?:^|[\s/=])([a-z_]+?)_perf(?:_mpi)?(?=\s+-)")
ENV_PAIR = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
# Launchers whose command lines start several processes (`mpirun -np 16 ... all_reduce_perf -g 1`).
LAUNCHERS = set("mpirun mpiexec mpiexec.hydra orterun srun jsrun aprun prun flux torchrun horovodrun".split())
PROMPT = re.compile(r"^(?:\(\S+\)\s*)?(?:\[[^\]]*\]|[\w.@:~/-]*)?[$%#]\s")  # `$ egrep ...`, `user@host:~$ ...`
MAX_COMMAND_CHARS = 64 * 1024  # a command continued with `\` over many lines
MOST_RANKS = 10**7  # --ranks bound: far beyond any machine, small enough to stay an integer everywhere


@dataclass
class Command:
    """A command line in the log that runs a `*_perf` binary, as far as it says how it ran."""

    test: str  # the binary, e.g. all_gather_perf
    env: dict[str, str]  # recorded variables set on it: `NCCL_X=1 ./build/...`, mpirun -x, srun --export
    ranks: int | None  # processes x -g x -t where the launcher's count is on the line (no launcher: one process)
    gpus: list[int] | None  # devices a single process uses: -g N of CUDA_VISIBLE_DEVICES, or 0..N-1


def command_of(line: str) -> Command | None:
    """The command line that runs one `*_perf` binary (`NCCL_P2P_DISABLE=1 ./build/sendrecv_perf
    -b 8 ...`, `mpirun -np 16 -x NCCL_ALGO=Ring .../all_reduce_perf -g 1`), or None."""
    if "NCCL INFO" in line or "NCCL WARN" in line:
        return None
    names = set(_BINARY.findall(line))
    if len(names) != 1:
        return None
    name = names.pop()
    words = line.split()
    at = next((i for i, w in enumerate(words) if re.search(rf"(?:^|[/=]){re.escape(name)}_perf(?:_mpi)?$", w)), None)
    if at is None:
        return Command(f"{name}_perf", {}, None, None)
    before, after = words[:at], words[at + 1 :]
    env: dict[str, str] = {}
    for word in before:
        for item in word.removeprefix("--export=").split(",") if word.startswith("--export=") else [word]:
            if (match := ENV_PAIR.match(item.strip("'\""))) and match.group(1).startswith(RECORDED_ENV_PREFIXES):
                env[match.group(1)] = match.group(2).strip("'\"")
    per_process = _option_int(after, ("-g", "--ngpus"), 1) * _option_int(after, ("-t", "--nthreads"), 1)
    if any(w.rsplit("/", 1)[-1] in LAUNCHERS for w in before):
        processes = _option_int(before, ("-np", "-n", "--np", "--ntasks"), None)
        ranks = processes * per_process if processes else None
        return Command(f"{name}_perf", env, ranks if ranks and ranks <= MOST_RANKS else None, None)
    if per_process > MOST_RANKS:
        return Command(f"{name}_perf", env, None, None)
    return Command(f"{name}_perf", env, per_process, visible_indices(env, per_process))


def _option_int(words: list[str], names: tuple[str, ...], default: int | None) -> int | None:
    """The integer value of an option (`-g 4`, `-g4`, `--ngpus=4`) among `words`, else `default`."""
    for index, word in enumerate(words):
        for name in names:
            value = None
            if word == name and index + 1 < len(words):
                value = words[index + 1]
            elif word.startswith(name + "=") or (len(name) == 2 and word.startswith(name) and word[2:].isdigit()):
                value = word[len(name) :].lstrip("=")
            if value is not None and value.isdigit() and len(value) <= MAX_DIGITS and 0 < int(value) <= MOST_RANKS:
                return int(value)
    return default
