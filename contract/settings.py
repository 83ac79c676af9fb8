"""Site settings and every environment variable wirewise reads, declared once.

A setting comes from the first of these that gives it, as uv and gh resolve theirs:

    the command's flag (--db, --rules, --partition)
    its environment variable (WIREWISE_DB, ...)
    the user's file   $XDG_CONFIG_HOME/wirewise/config.toml (default ~/.config/wirewise/config.toml)
    the site's file   /etc/wirewise/config.toml ($WIREWISE_SITE_CONFIG names another, for tests)
    the default       state in $XDG_DATA_HOME/wirewise (default ~/.local/share/wirewise), whatever
                      the current folder: one history per user, as gh and uv keep theirs

The files are TOML (tomllib, Python 3.11) with the keys of SETTINGS at the top level; a path in
a file is relative to that file's folder. A file wirewise cannot use is one line naming the
file and the key, exit 2. ENVIRONMENT is the one table of variables: docs/configuration.md is
generated from it (tests/cli/test_config.py holds the two together), and no other module names
a WIREWISE_ variable or reads one but through Variable.get (tests/cli/test_config.py too).

Torch-free and cheap (tomllib and pathlib): the compute side asks it for the run folder, and
`wirewise --help` never imports it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wirewise.errors import UserError

SITE_FILE = Path("/etc/wirewise/config.toml")


@dataclass(frozen=True)
class Variable:
    """One environment variable wirewise reads or sets, with what it means."""

    name: str
    doc: str

    def get(self, env: Mapping[str, str] | None = None) -> str | None:
        """Its value in `env` (default: this process's environment); an empty value counts as
        unset, as a shell's `VAR=` is meant. Every module reads a variable through here."""
        return (os.environ if env is None else env).get(self.name) or None


SITE_CONFIG = Variable("WIREWISE_SITE_CONFIG", "The site's configuration file, instead of /etc/wirewise/config.toml.")
DB = Variable("WIREWISE_DB", "The database URL (setting `db`); wirewise exports it to the jobs it launches.")
RULES = Variable("WIREWISE_RULES", "The rules file laid over the shipped rules (setting `rules`).")
PARTITION = Variable("WIREWISE_PARTITION", "The Slurm partition of the fleet commands, `topo survey` and `run` (setting `partition`).")
RUNS = Variable("WIREWISE_RUNS", "The folder of run folders: specs, rank logs, result files (setting `runs`).")
DB_WAIT = Variable("WIREWISE_DB_WAIT_S", "Seconds a result waits for a busy database before wirewise gives up storing it (setting `db_wait_s`).")
STRATEGY = Variable("WIREWISE_STRATEGY", "Set by `wirewise run` and `wirewise launch` for the job: the strategy it was given.")
LAUNCH_DIR = Variable("WIREWISE_LAUNCH_DIR", "Set by `wirewise launch` for the job's ranks: the run folder holding its launch file.")
PEAK_TFLOPS = Variable("WIREWISE_PEAK_TFLOPS", "A measured peak bf16 TFLOP/s per GPU (a matmul's): training records a second MFU against it, beside the datasheet's.")
XDG_CONFIG_HOME = Variable("XDG_CONFIG_HOME", "The user's configuration folder (default ~/.config): the user's file is wirewise/config.toml in it.")
XDG_DATA_HOME = Variable("XDG_DATA_HOME", "The user's data folder (default ~/.local/share): the default database and run folders are in wirewise/ in it.")

ENVIRONMENT: tuple[Variable, ...] = (
    DB, RULES, PARTITION, RUNS, DB_WAIT, SITE_CONFIG, XDG_CONFIG_HOME, XDG_DATA_HOME, STRATEGY, LAUNCH_DIR, PEAK_TFLOPS,
)


@dataclass(frozen=True)
class Setting:
    """A site setting: its key in the files, its variable, its flag, what it holds."""

    key: str
    variable: Variable
    flag: str | None
    kind: str  # url, path, name or seconds: how a file's value is checked and made absolute
    doc: str


SETTINGS: tuple[Setting, ...] = (
    Setting("db", DB, "--db", "url", "Database URL: sqlite:///PATH or postgresql+psycopg://USER@HOST/DB (default: wirewise.db in the data folder)."),
    Setting("rules", RULES, "--rules", "path", "A rules file laid over the shipped rules, guardrails included (`wirewise rules show` prints the shipped ones)."),
    Setting("partition", PARTITION, "--partition", "name", "The Slurm partition the fleet commands, `topo survey` and `run` use when given no nodes (default: every partition)."),
    Setting("runs", RUNS, None, "path", "The folder of run folders (default: runs/ in the data folder); a campaign on Slurm needs it on a shared filesystem."),
    Setting("db_wait_s", DB_WAIT, None, "seconds", "Seconds a result waits for a busy database before wirewise gives up storing it (default 600)."),
)
BY_KEY = {setting.key: setting for setting in SETTINGS}


@dataclass(frozen=True)
class Value:
    """A setting's value and where it came from: a flag, a variable, a file, or "default"."""

    key: str
    value: Any
    source: str

    @property
    def is_default(self) -> bool:
        return self.source == "default"

    @property
    def origin(self) -> str:
        """Where it came from, in words: 'the default', '--db', 'WIREWISE_DB', 'db in FILE'."""
        entry = BY_KEY[self.key]
        if self.is_default or self.source in (entry.flag, entry.key, entry.variable.name):
            return "the default" if self.is_default else self.source
        return f"{self.key} in {self.source}"


def data_dir() -> Path:
    """$XDG_DATA_HOME/wirewise, else ~/.local/share/wirewise (a relative XDG_DATA_HOME is
    ignored, as the XDG Base Directory spec says)."""
    return _xdg(XDG_DATA_HOME, ".local/share") / "wirewise"


def user_file() -> Path:
    return _xdg(XDG_CONFIG_HOME, ".config") / "wirewise" / "config.toml"


def site_file() -> Path:
    return Path(SITE_CONFIG.get() or SITE_FILE)


def _xdg(variable: Variable, fallback: str) -> Path:
    value = variable.get()
    return Path(value) if value and os.path.isabs(value) else Path.home() / fallback


def defaults() -> dict[str, Any]:
    return {"db": f"sqlite:///{data_dir() / 'wirewise.db'}", "rules": None, "partition": None,
            "runs": str(data_dir() / "runs"), "db_wait_s": 600.0}


def setting(key: str, flag: Any = None) -> Value:
    """The setting `key`: the flag as typed when given, else the first of its variable, the
    user's file, the site's file, the default."""
    entry = BY_KEY[key]
    if flag is not None and str(flag) != "":  # `--db ""` is no choice, as an empty variable is none
        return Value(key, _checked(entry, flag, entry.flag or key), entry.flag or key)
    typed = entry.variable.get()
    if typed is not None:
        return Value(key, _checked(entry, typed, entry.variable.name), entry.variable.name)
    for path in (user_file(), site_file()):
        found = read_file(path)
        if key in found:
            return Value(key, found[key], str(path))
    return Value(key, defaults()[key], "default")


def every_setting() -> list[Value]:
    return [setting(entry.key) for entry in SETTINGS]


def read_file(path: Path) -> dict[str, Any]:
    """A configuration file's settings, checked, its paths made absolute; {} where there is no
    file. Anything else wrong is one line naming the file (and the key)."""
    import tomllib

    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return {}
    except IsADirectoryError:
        raise UserError(f"{path}: a configuration file, not a folder") from None
    except OSError as exc:
        raise UserError(f"cannot read the configuration file {path}: {exc.strerror}") from None
    try:
        doc = tomllib.loads(text.decode())
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text (TOML files are UTF-8)") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML: {exc}") from None
    found = {}
    for key, value in doc.items():
        entry = BY_KEY.get(key)
        if entry is None:
            raise UserError(f"{path}: {key}: unknown key (the keys are {', '.join(BY_KEY)}; docs/configuration.md)")
        found[key] = _checked(entry, value, f"{path}: {key}", path.parent)
    return found


def _checked(entry: Setting, value: Any, where: str, folder: Path | None = None) -> Any:
    """`value` as the setting holds it; `folder`, for a file's value, is what a relative path
    in it is relative to (a flag's or a variable's stays relative to the current folder)."""
    if entry.kind == "seconds":
        try:
            seconds = float(value) if not isinstance(value, bool) else None
        except (TypeError, ValueError):
            seconds = None
        if seconds is None or not seconds >= 0 or seconds == float("inf"):
            raise UserError(f"{where}: {value!r}: give a number of seconds, 0 or more")
        return seconds
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{where}: {value!r}: give a {'URL' if entry.kind == 'url' else entry.kind} as a non-empty string")
    if folder is None:
        return value
    if entry.kind == "path":
        return str(folder / Path(value).expanduser())
    if entry.kind == "url" and value.startswith("sqlite:///") and not value.startswith("sqlite:////"):
        database = value.removeprefix("sqlite:///")
        if database and not database.startswith((":memory:", "file:")):
            return f"sqlite:///{folder / Path(database).expanduser()}"
    return value


def reference() -> str:
    """The Markdown tables of docs/configuration.md's generated part: the settings, then every
    variable (`python -m wirewise.settings` prints it)."""
    lines = ["| key | variable | flag | what it sets |", "|---|---|---|---|"]
    lines += [f"| `{s.key}` | `{s.variable.name}` | {f'`{s.flag}`' if s.flag else ''} | {s.doc} |" for s in SETTINGS]
    lines += ["", "| variable | what it means |", "|---|---|"]
    lines += [f"| `{v.name}` | {v.doc} |" for v in ENVIRONMENT]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(reference(), end="")
