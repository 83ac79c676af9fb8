"""What `import nccl-tests` is told of a log's runs: --op, --ranks, --transport and --env.

Options that set a run's facts (--op, --ranks, --transport) take `VALUE` for every run or
`LINE:VALUE` for the run starting at LINE (PerRun), so one run of a file can be named alone;
a LINE that starts no run is refused (a typo would silently set nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wirewise.errors import UserError
from wirewise.orchestrator.record.nccl_tests.commands import ENV_PAIR, MOST_RANKS
from wirewise.orchestrator.record.nccl_tests.inference import KNOWN_OPS
from wirewise.orchestrator.record.nccl_tests.rows import MAX_DIGITS
from wirewise.record import RECORDED_ENV_PREFIXES

if TYPE_CHECKING:
    from wirewise.orchestrator.record.nccl_tests.sections import Section


@dataclass(frozen=True)
class HowItRan:
    """What the log does not say about its runs, as `import nccl-tests` is told it: the
    transport (--transport, for every run or the run at a line) and the environment (--env)."""

    transport: PerRun | str | None = None
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_options(cls, transports: list[str] | str | None, pairs: list[str]) -> HowItRan:
        """--transport and the --env pairs, checked; UserError names the bad one."""
        from wirewise.workloads import TRANSPORT_ENV

        transport = PerRun.parse("--transport", transports, lambda text: text if text in TRANSPORT_ENV else None,
                                 f"choose one of {', '.join(TRANSPORT_ENV)}")
        env: dict[str, str] = {}
        for pair in pairs:
            match = ENV_PAIR.match(pair)
            if not match:
                raise UserError(f"--env {pair!r}: give KEY=VALUE, e.g. --env NCCL_ALGO=Ring")
            if not match.group(1).startswith(RECORDED_ENV_PREFIXES):
                raise UserError(f"--env {pair!r}: a run records only variables beginning {', '.join(RECORDED_ENV_PREFIXES)}")
            env[match.group(1)] = match.group(2)
        return cls(transport, env)

    def transport_of(self, section: Section, logged: dict[str, str]) -> str:
        """--transport for this run, else the transport the log shows the run's environment set, else default."""
        from wirewise.workloads import transport_set_by

        given = self.transport if isinstance(self.transport, str) or self.transport is None else self.transport.get(section.first_line)
        return given or transport_set_by(logged)

    def env_of(self, section: Section, file_name: str) -> tuple[str, dict[str, str]]:
        """The run's transport and recorded environment: its command line, its NCCL INFO lines,
        --env, the transport's settings."""
        from wirewise.workloads import transport_env

        logged = {**(section.command.env if section.command else {}), **section.env}
        for key, value in self.env.items():
            if logged.get(key, value) != value:
                raise UserError(f"--env {key}={value} but {file_name} says {key}={logged[key]} (line {section.first_line})")
        env = {**logged, **self.env}
        transport = self.transport_of(section, logged)
        try:
            return transport, dict(sorted(transport_env(transport, env).items()))
        except ValueError as exc:
            raise UserError(f"{file_name} (run at line {section.first_line}): {exc}") from None


class PerRun:
    """An option that sets a fact of a run: `VALUE` for every run, `LINE:VALUE` for the run at
    LINE (its first line, as the summary and the messages number runs); the two combine."""

    def __init__(self, option: str, every: Any = None, by_line: dict[int, Any] | None = None):
        self.option, self.every, self.by_line = option, every, by_line or {}

    @classmethod
    def parse(cls, option: str, values: list[str] | str | None, convert, expected: str) -> PerRun | None:
        if values is None:
            return None
        per_run = cls(option)
        for text in [values] if isinstance(values, str) else values:
            line, sep, value = str(text).rpartition(":")
            converted = convert(value.strip())
            if converted is None:
                raise UserError(f"{option} {text!r}: {expected}")
            if not sep:
                if per_run.every is not None and per_run.every != converted:
                    raise UserError(f"{option} given twice for every run ({per_run.every}, {converted}): name a run, {option} LINE:VALUE")
                per_run.every = converted
            elif line.strip().isdigit() and len(line.strip()) <= MAX_DIGITS and int(line) >= 1:
                per_run.by_line[int(line)] = converted
            else:
                raise UserError(f"{option} {text!r}: LINE:VALUE names the run starting at line LINE, e.g. {option} 40:{value.strip()}")
        return per_run

    def get(self, line: int) -> Any:
        return self.by_line.get(line, self.every)

    def check_used(self, runs: list[int], file_name: str) -> None:
        """A LINE that starts no run is a mistake (a typo would silently set nothing)."""
        for line in sorted(set(self.by_line) - set(runs)):
            starts = ", ".join(map(str, runs[:10])) + (" ..." if len(runs) > 10 else "")
            raise UserError(f"{self.option} {line}:{self.by_line[line]}: no run of {file_name} starts at line {line} (runs start at lines {starts})")


def _op_option(text: str) -> str | None:
    return text if text in KNOWN_OPS else None


def _ranks_option(text: str) -> int | None:
    return int(text) if text.isdigit() and len(text) <= MAX_DIGITS and 1 <= int(text) <= MOST_RANKS else None


@dataclass
class Given:
    """What `import nccl-tests` is told of the runs (each option for every run, or per run)."""

    op: PerRun | None = None
    ranks: PerRun | None = None
    node: str | None = None
    how: HowItRan = HowItRan()

    @classmethod
    def from_options(cls, op: list[str] | str | None = None, ranks: list[str] | str | int | None = None,
                     node: str | None = None, how: HowItRan = HowItRan()) -> Given:
        """--op and --ranks (`VALUE` or `LINE:VALUE`, repeatable), checked; UserError names the bad one."""
        ops = PerRun.parse("--op", op, _op_option, f"not a collective nccl-tests measures; choose one of {', '.join(sorted(KNOWN_OPS))}")
        counts = PerRun.parse("--ranks", [str(ranks)] if isinstance(ranks, int) else ranks, _ranks_option,
                              f"give the run's rank count, 1 to {MOST_RANKS:,}")
        return cls(ops, counts, node, how)

    def check_lines(self, sections: list[Section], file_name: str) -> None:
        runs = [s.first_line for s in sections]
        for option in (self.op, self.ranks, self.how.transport):
            if isinstance(option, PerRun):
                option.check_used(runs, file_name)
