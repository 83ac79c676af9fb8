"""Settings and where state lives (issue 31, items 1 and 2): the site's file, the user's file,
the variables and the flags, each over the one before; one history whatever the folder; reads
that create nothing; a backup that keeps the rows still in SQLite's write-ahead log. Real
processes on real files; the suite's XDG folders and site file are its own (tests/conftest.py)."""

from __future__ import annotations

import ast
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, wirewise, wirewise_json
from wirewise import settings

NCCL_LOG = FIXTURES / "nccl-tests" / "cnode3-h100-1node-8gpu-five-collectives-2.17.8.log"


@pytest.fixture
def user(tmp_path: Path) -> dict[str, str]:
    """A user of their own: XDG folders and a site file under tmp_path, none of them there yet."""
    return {"XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "WIREWISE_SITE_CONFIG": str(tmp_path / "etc" / "config.toml")}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def shown(env: dict[str, str], *keys: str, cwd: Path | None = None) -> dict[str, tuple]:
    doc = wirewise_json("config", "show", *keys, env=env, cwd=cwd)
    return {row["key"]: (row["value"], row["from"]) for row in doc["settings"]}


def test_each_source_overrides_the_one_before(tmp_path, user):
    site = write(tmp_path / "etc" / "config.toml", 'db = "sqlite:///site.db"\npartition = "site-p"\nrules = "rules.yaml"\n'
                 "db_wait_s = 5\n")
    write(site.parent / "rules.yaml", "")  # config show reads it for the guardrails
    assert shown(user)["db"] == (f"sqlite:///{site.parent / 'site.db'}", f"db in {site}")  # relative to the file's folder
    assert shown(user)["rules"] == (str(site.parent / "rules.yaml"), f"rules in {site}")
    mine = write(tmp_path / "config" / "wirewise" / "config.toml", 'db = "sqlite:////data/mine.db"\n')
    got = shown(user)
    assert got["db"] == ("sqlite:////data/mine.db", f"db in {mine}")
    assert got["partition"] == ("site-p", f"partition in {site}") and got["db_wait_s"] == (5.0, f"db_wait_s in {site}")
    got = shown({**user, "WIREWISE_DB": "sqlite:///env.db", "WIREWISE_PARTITION": "env-p"})
    assert got["db"] == ("sqlite:///env.db", "WIREWISE_DB") and got["partition"] == ("env-p", "WIREWISE_PARTITION")
    assert got["runs"] == (str(tmp_path / "data" / "wirewise" / "runs"), "the default")


def test_a_flag_overrides_every_file_and_variable(tmp_path, user):
    """The flag, as the command uses it: `topo save` stores where --db says, not where the
    variable or the files say, and each of those is used when the ones above it are absent."""
    write(tmp_path / "etc" / "config.toml", f'db = "sqlite:///{tmp_path / "site.db"}"\n')
    write(tmp_path / "config" / "wirewise" / "config.toml", f'db = "sqlite:///{tmp_path / "user.db"}"\n')
    topo = str(FIXTURES / "topo" / "h100-sxm-8gpu-nvswitch-12nic-numaoff.txt")
    env = {**user, "WIREWISE_DB": f"sqlite:///{tmp_path / 'env.db'}"}
    for where, extra, this_env in (("flag.db", ["--db", f"sqlite:///{tmp_path / 'flag.db'}"], env), ("env.db", [], env),
                                   ("user.db", [], user)):
        proc = wirewise("topo", "save", "--from-file", topo, "--node", "n1", *extra, env=this_env, check=True)
        assert str(tmp_path / where) in proc.stdout, proc.stdout
    (tmp_path / "config" / "wirewise" / "config.toml").unlink()
    wirewise("topo", "save", "--from-file", topo, "--node", "n1", env=user, check=True)
    assert sorted(p.name for p in tmp_path.glob("*.db")) == ["env.db", "flag.db", "site.db", "user.db"]


@pytest.mark.parametrize("text, expected", [
    ('dbb = "sqlite:///x.db"\n', "dbb: unknown key (the keys are db, rules, partition, runs, db_wait_s"),
    ("db = 3\n", "db: 3: give a URL as a non-empty string"),
    ('partition = ""\n', "partition: '': give a name as a non-empty string"),
    ('db_wait_s = "soon"\n', "db_wait_s: 'soon': give a number of seconds"),
    ("db_wait_s = -1\n", "db_wait_s: -1: give a number of seconds"),
    ('db = "sqlite:///x.db\n', "not valid TOML: "),
    ("db = [\n", "not valid TOML: "),
])
def test_a_bad_file_is_one_line_naming_the_file_and_key(tmp_path, user, text, expected):
    for path in (tmp_path / "etc" / "config.toml", tmp_path / "config" / "wirewise" / "config.toml"):
        write(path, text)
        for command in (["config", "show"], ["results"], ["db", "upgrade"]):
            proc = wirewise(*command, env=user)
            assert proc.returncode == 2, proc.stderr
            lines = proc.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"wirewise: error: {path}: ") and expected in lines[0], lines
        path.unlink()
    assert not (tmp_path / "data").exists()


def test_a_file_that_is_not_text_or_not_readable(tmp_path, user):
    site = write(tmp_path / "etc" / "config.toml", "")
    site.write_bytes(b"db = '\xff'\n")
    assert f"{site}: not UTF-8 text" in wirewise("config", "show", env=user).stderr
    site.unlink()
    site.mkdir()
    assert f"{site}: a configuration file, not a folder" in wirewise("config", "show", env=user).stderr


def test_a_bad_variable_names_itself(user):
    proc = wirewise("config", "show", env={**user, "WIREWISE_DB_WAIT_S": "soon"})
    assert proc.returncode == 2 and "WIREWISE_DB_WAIT_S: 'soon': give a number of seconds" in proc.stderr


def test_config_show_lists_the_guardrails_from_the_rules_they_live_in(tmp_path, user):
    got = shown(user)
    assert got["guardrails.max_share"] == (0.1, "the shipped rules")
    rules = write(tmp_path / "etc" / "rules.yaml", "guardrails:\n  max_per_hour: 2\n")
    write(tmp_path / "etc" / "config.toml", 'rules = "rules.yaml"\n')
    got = shown(user, "guardrails")
    assert got == {"guardrails.max_share": (0.1, f"rules file {rules}"), "guardrails.max_per_hour": (2, f"rules file {rules}")}
    text = wirewise("config", "show", env=user, check=True).stdout
    assert "guardrails.max_per_hour" in text and f"site file: {tmp_path / 'etc' / 'config.toml'}" in text
    assert wirewise("config", "show", "nonsense", env=user).returncode == 2


def test_the_setting_rules_is_the_file_the_rules_are_read_from(tmp_path, user):
    write(tmp_path / "etc" / "rules.yaml", "guardrails:\n  max_shar: 0.5\n")
    write(tmp_path / "etc" / "config.toml", 'rules = "rules.yaml"\n')
    proc = wirewise("doctor", "--db", f"sqlite:///{tmp_path / 'none.db'}", env=user)
    assert proc.returncode == 2 and f"{tmp_path / 'etc' / 'rules.yaml'}: guardrails.max_shar: unknown key" in proc.stderr


def test_two_folders_see_one_history(tmp_path, user):
    """Stored from one folder, read from another, with no --db: the same database, in the data
    folder, and nothing written in either folder."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    stored = wirewise("import", "nccl-tests", str(NCCL_LOG), env=user, cwd=first, check=True)
    database = tmp_path / "data" / "wirewise" / "wirewise.db"
    assert f"sqlite:///{database}" in stored.stdout  # the message names the actual file
    rows = wirewise_json("results", env=user, cwd=second)
    assert sum(row["count"] for row in rows) == 100
    assert wirewise_json("db", "info", env=user, cwd=second)["url"] == f"sqlite:///{database}"
    assert list(first.iterdir()) == [] and list(second.iterdir()) == []


READ_ONLY = [
    ["results"], ["compare", "node:a", "node:b"], ["report", "--out", "{tmp}/report"], ["fleet", "status"],
    ["fleet", "status", "--node", "vm"], ["db", "info"], ["db", "backup", "{tmp}/copy.db"], ["doctor"], ["topo", "list"],
    ["campaign", "list"], ["campaign", "status", "c1"], ["baseline", "export", "--out", "{tmp}/b.json"],
]


@pytest.mark.parametrize("command", READ_ONLY, ids=lambda c: " ".join(c[:2]))
def test_read_only_commands_create_no_database(tmp_path, user, command):
    """Each says there is no database, names the file and how to point at another, exit 2; the
    data folder and the current folder stay empty."""
    (tmp_path / "here").mkdir()
    args = [arg.replace("{tmp}", str(tmp_path / "here")) for arg in command]
    proc = wirewise(*args, env=user, cwd=tmp_path / "here")
    assert proc.returncode == 2, proc.stderr
    database = tmp_path / "data" / "wirewise" / "wirewise.db"
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()] and f"no database at {database} (the default)" in proc.stderr
    assert "--db URL" in proc.stderr
    assert not (tmp_path / "data").exists() and list((tmp_path / "here").iterdir()) == []
    named = wirewise(*args, "--db", f"sqlite:///{tmp_path / 'named.db'}", env=user, cwd=tmp_path / "here")
    assert named.returncode == 2 and f"no database at {tmp_path / 'named.db'} (--db)" in named.stderr
    assert not (tmp_path / "named.db").exists()


def test_backup_keeps_the_rows_still_in_the_write_ahead_log(tmp_path, user):
    """Rows stored while another connection holds the database open stay in wirewise.db-wal (no
    checkpoint can finish): a copy of wirewise.db alone has none of them. `db backup` copies
    them all; the copy, used as the database, reads every row of every table."""
    database = tmp_path / "data" / "wirewise" / "wirewise.db"
    wirewise("db", "upgrade", env=user, check=True)
    holder = sqlite3.connect(database)
    holder.execute("PRAGMA wal_autocheckpoint=0")
    try:
        wirewise("import", "nccl-tests", str(NCCL_LOG), env=user, check=True)
        assert Path(f"{database}-wal").stat().st_size > database.stat().st_size
        plain = tmp_path / "plain.db"
        shutil.copyfile(database, plain)
        with sqlite3.connect(plain) as conn:
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
            assert "results" not in tables or conn.execute("SELECT count(*) FROM results").fetchone()[0] == 0
        done = wirewise_json("db", "backup", str(tmp_path / "backup.db"), env=user)
        original = _every_row(holder)
    finally:
        holder.close()
    assert done["rows"]["results"] == 100 and done["backup"] == str(tmp_path / "backup.db")
    assert not list(tmp_path.glob("backup.db-*")) and not list(tmp_path.glob(".backup.db.partial-*"))
    restored = tmp_path / "restored" / "wirewise" / "wirewise.db"  # another user's data folder, the copy put there
    restored.parent.mkdir(parents=True)
    shutil.copyfile(tmp_path / "backup.db", restored)
    with sqlite3.connect(restored) as conn:
        assert _every_row(conn) == original and len(original["results"]) == 100
    elsewhere = {**user, "XDG_DATA_HOME": str(tmp_path / "restored")}
    assert wirewise_json("results", env=elsewhere) == wirewise_json("results", env=user)
    again = wirewise("db", "backup", str(tmp_path / "backup.db"), env=user)
    assert again.returncode == 2 and "exists: give a new file" in again.stderr


def _every_row(conn) -> dict[str, list]:
    tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return {name: sorted(map(repr, conn.execute(f'SELECT * FROM "{name}"'))) for name in tables}


@pytest.mark.postgres
def test_backup_of_postgresql_names_the_pg_dump_command(pg_url, tmp_path, user):
    wirewise("db", "upgrade", "--db", pg_url, env=user, check=True)
    proc = wirewise("db", "backup", str(tmp_path / "x.dump"), "--db", pg_url, env=user)
    assert proc.returncode == 2
    command = re.search(r"pg_dump: (pg_dump .*)$", proc.stderr.strip())[1]
    libpq = pg_url.replace("postgresql+psycopg://", "postgresql://")
    assert command == f"pg_dump --format=custom --file={tmp_path / 'x.dump'} {libpq}"
    import subprocess

    ran = subprocess.run(command.split(), capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "x.dump").stat().st_size > 0


def test_the_environment_reference_is_generated_from_the_one_table():
    """docs/configuration.md holds settings.reference() between its markers, as uv's reference
    is generated from its one table of variables (`python -m wirewise.settings` prints it)."""
    doc = (ROOT / "docs" / "configuration.md").read_text()
    begin, end = "<!-- generated: python -m wirewise.settings -->\n", "<!-- end of generated -->"
    assert doc[doc.index(begin) + len(begin):doc.index(end)] == settings.reference()


def test_no_module_names_a_variable_outside_the_table():
    """Every WIREWISE_ variable wirewise reads or sets is declared in wirewise.settings: no other
    module of the package spells one. (That the docs name only declared ones, or the test
    services' own, is tests/test_references.py's.)"""
    pattern = re.compile(r"[\"']WIREWISE_[A-Z_]+[\"']")
    spelled = [f"{path.relative_to(ROOT)}: {match}" for path in _product_modules() for match in pattern.findall(path.read_text())]
    assert spelled == []


def _product_modules():
    return [path for folder in ("contract", "orchestrator", "jobs", "db") for path in (ROOT / folder).rglob("*.py")
            if path.name != "settings.py"]


def reads_around_the_declaration(paths) -> list[str]:
    """Where a module reads a declared variable itself (os.environ.get(X.name), env[X.name],
    os.getenv(X.name)) or gives one a second name (X_ENV = X.name)."""
    declared = {name for name, value in vars(settings).items() if isinstance(value, settings.Variable)}

    def names_a_variable(node) -> bool:
        if not (isinstance(node, ast.Attribute) and node.attr == "name"):
            return False
        owner = node.value
        return (isinstance(owner, ast.Name) and owner.id in declared) or (
            isinstance(owner, ast.Attribute) and owner.attr in declared and isinstance(owner.value, ast.Name)
            and owner.value.id == "settings")

    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "getenv", "pop"):
                keys = node.args[:1]
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                keys = [node.slice]
            elif isinstance(node, ast.Assign):
                keys = [node.value]  # an alias
            else:
                continue
            found += [f"{path}:{node.lineno}" for key in keys if names_a_variable(key)]
    return found


def test_every_variable_is_read_through_its_declaration(tmp_path):
    """No module but wirewise.settings reads a declared variable around Variable.get (the one
    read: an empty value is unset everywhere) or names one but as X.name; the check sees each
    way of doing it (planted)."""
    assert reads_around_the_declaration(_product_modules()) == []
    planted = ["import os\nfrom wirewise.settings import DB\nurl = os.environ.get(DB.name)\n",
               "import os\nfrom wirewise import settings\nurl = os.environ[settings.DB.name]\n",
               "from wirewise.settings import STRATEGY\nSTRATEGY_ENV = STRATEGY.name\n"]
    for i, text in enumerate(planted):
        (tmp_path / f"planted{i}.py").write_text(text)
    assert len(reads_around_the_declaration(sorted(tmp_path.glob("planted*.py")))) == len(planted)


def test_help_does_not_read_the_settings(tmp_path, user):
    """`wirewise --help` imports no settings: a broken file does not break it."""
    write(tmp_path / "etc" / "config.toml", "db = [\n")
    proc = wirewise("--help", env=user)
    assert proc.returncode == 0 and "config" in proc.stdout and "rules" in proc.stdout


def test_rules_show_prints_the_shipped_rules(tmp_path, user):
    from wirewise.orchestrator.health.rules import DEFAULTS

    text = wirewise("rules", "show", env=user, check=True).stdout
    assert text == DEFAULTS.read_text()
    site = write(tmp_path / "etc" / "rules.yaml", text)
    write(tmp_path / "etc" / "config.toml", f'rules = "{site}"\n')
    assert shown(user, "guardrails")["guardrails.max_share"] == (0.1, f"rules file {site}")
    assert wirewise_json("rules", "show", env=user)["guardrails"] == {"max_share": 0.1, "max_per_hour": 5}
