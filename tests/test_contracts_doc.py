"""What the docs say of the code's contracts, against the code: the keys and fields
docs/contracts.md lists are the ones the code produces (the record, `topo show`'s topology and its
example, JSON outputs, the bounds), the rules table of docs/fleet.md is the shipped rules file
and results.md's doctor table the rules doctor judges, the baselines file's format, version and
keys are what `baseline export` writes and import reads, README.md's table of commands has
every command, and nothing points to a design file the repository does not hold (issue 10 item
16, issue 34 item 5). That each name the docs cite exists (commands, options, rules, variables)
is tests/test_references.py's."""

from __future__ import annotations

import json
import re

import yaml

from tests.conftest import FIXTURES, ROOT, wirewise, wirewise_json

DOC = (ROOT / "docs" / "contracts.md").read_text()
FLEET = (ROOT / "docs" / "fleet.md").read_text()
RESULTS = (ROOT / "docs" / "results.md").read_text()
QUADS = FIXTURES / "topo" / "synthetic-h200-nvl-8gpu-two-quads.txt"


def _section(title: str, doc: str = DOC) -> str:
    """The text under the first heading that starts with `title`, to the next of its level or above."""
    heading = re.search(rf"^(#+) {re.escape(title)}", doc, flags=re.M)
    return re.split(rf"\n#{{1,{len(heading[1])}}} ", doc[heading.end():], maxsplit=1)[0]


def _rows(section: str) -> list[list[str]]:
    """The cells of each row of the section's tables (not their heads or rules)."""
    lines = [line for line in section.splitlines() if line.startswith("|")]
    return [[c.strip() for c in line.strip("|").split(" | ")] for i, line in enumerate(lines)
            if not line.startswith("|-") and not (i + 1 < len(lines) and lines[i + 1].startswith("|-"))]


def _table_names(section: str) -> list[str]:
    """First-column names of a markdown table, `a`, `b` cells split into each name."""
    names = []
    for line in section.splitlines():
        if line.startswith("| `"):
            names += re.findall(r"`([^`]+)`", line.split("|")[1])
    return names


def _listed_keys(item: str) -> list[str]:
    """The backticked names of one bullet of 'Other JSON outputs', after its colon."""
    bullet = next(b for b in _section("Other JSON outputs").split("\n- ") if b.lstrip("- ").startswith(item))
    return re.findall(r"`([a-z_]+)`", bullet.split(":", 1)[1])


def _keys_said(output: str) -> list[str]:
    """The backticked names after '`OUTPUT`:' in 'Other JSON outputs', up to the next output
    named (`... --json`) or the bullet's end: where one bullet says two outputs."""
    text = _section("Other JSON outputs")
    start = text.index(f"`{output}`:") + len(output) + 3
    end = min(m.start() for m in re.finditer(r"`[^`]*--json`|\n- |$", text[start:])) + start
    return re.findall(r"`([a-z_]+)`", text[start:end])


def test_topology_keys_and_example_are_what_topo_show_prints():
    shown = wirewise_json("topo", "show", "--from-file", str(QUADS))
    assert _table_names(_section("Topology")) == list(shown)
    example = json.loads(_section("Topology").split("```json", 1)[1].split("```", 1)[0])
    assert example == shown


def test_result_record_fields_are_the_models():
    from wirewise.record import ResultRecord

    assert sorted(_table_names(_section("Result record"))) == sorted(ResultRecord.model_fields)


def test_the_declared_extra_keys_are_the_contracts():
    """The result record's `extra` row lists, as declared, exactly wirewise.record.Extra's keys."""
    from wirewise.record import Extra

    row = next(line for line in _section("Result record").splitlines() if line.startswith("| `extra`"))
    declared = row.split("Declared", 1)[1].split("Private", 1)[0]
    listed = set(re.findall(r"`([a-z_]+)`", declared)) - {"nccl", "gloo", "cuda", "cpu", "gpu_count", "doctor"}
    assert listed == set(Extra.__optional_keys__)


def test_json_rows_and_import_summary_keys():
    from wirewise.orchestrator.record.nccl_tests import read_log_file
    from wirewise.orchestrator.report.collectives import json_row

    imported = read_log_file(FIXTURES / "nccl-tests" / "nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt")
    assert _listed_keys("`wirewise bench collectives --json`") == list(json_row(imported.records[0]))
    summary = imported.summary(new=0)
    listed = _listed_keys("`wirewise import nccl-tests LOG --json`")
    assert list(dict.fromkeys(k for k in listed if k in summary)) == list(summary)
    assert set(listed) == set(summary) | set(summary["sections"][0])


def test_nothing_points_to_a_design_file_outside_the_repository():
    tracked = [p for folder in ("contract", "orchestrator", "jobs", "db", "docs") for p in (ROOT / folder).rglob("*") if p.is_file()]
    for path in [ROOT / "README.md", *tracked]:
        if path.suffix in (".py", ".md"):
            assert "DESIGN.md" not in path.read_text(), path
    for linked in re.findall(r"\]\(([a-z]+\.md)\)", DOC):
        assert linked in ("campaigns.md", "placement.md") or (ROOT / "docs" / linked).exists(), linked


def test_the_bounds_table_is_wirewise_limits():
    """Every bound in wirewise.limits is in the table, with its value."""
    from wirewise import limits, units

    rows = {}
    for line in _section("Bounds").splitlines():
        if line.startswith("| `"):
            name, value = (cell.strip() for cell in line.split("|")[1:3])
            rows[name.strip("`")] = value
    bounds = {name: getattr(limits, name) for name in dir(limits) if name.startswith("MAX_")}
    assert set(rows) == set(bounds)
    for name, value in bounds.items():
        assert rows[name].split()[0] == str(value) or rows[name] == units.bytes_text(value, "bound"), (name, rows[name])


def _shipped_at(path: str):
    """A value of the shipped rules file by its dotted path (`rules.busbw-below-baseline`)."""
    from wirewise.orchestrator.health.rules import DEFAULTS

    value = yaml.safe_load(DEFAULTS.read_text())
    for key in path.split("."):
        value = value[key]
    return value


def test_the_rules_table_is_the_shipped_rules_file():
    """docs/fleet.md's table of rules: each row's default is the shipped value (`enabled`: a
    rule with nothing to set but that), and every field of the file is in a row."""
    from wirewise.orchestrator.health.rules import DEFAULTS

    rows = {path.strip("`"): default.strip("`") for path, default, *_ in _rows(_section("Rules", FLEET))}
    for path, default in rows.items():
        shipped = _shipped_at(path)
        if isinstance(shipped, dict):
            said = {"enabled": True} if default == "enabled" else {"enabled": True, **yaml.safe_load(f"{{{default}}}")}
            assert said == {"enabled": True, **shipped}, path
        else:
            assert yaml.safe_load(default) == shipped, path

    def leaves(value, path=""):
        if not isinstance(value, dict):
            return [path]
        return [leaf for key, sub in value.items() for leaf in leaves(sub, f"{path}.{key}".lstrip("."))]

    missing = [leaf for leaf in leaves(yaml.safe_load(DEFAULTS.read_text()))
               if not any(leaf == row or leaf.startswith(f"{row}.") for row in rows)]
    assert missing == []


def test_the_rules_files_bounds_are_the_validators():
    """The bounds fleet.md gives a rules file's values are those its validation holds them to."""
    from wirewise.limits import MAX_REPEATS
    from wirewise.orchestrator.health.rules import MAX_SIGMAS, PROLOG_MAX_BYTES, PROLOG_MAX_ITERS, PROLOG_TIME_S

    said = re.search(r"`repeats` at most ([\d,]+), `sigmas` at most ([\d,]+), the prolog's `iters` and `warmup` at most "
                     r"([\d,]+), its sizes at most (\d+) GiB, its `time_limit_s` from (\d+) to (\d+) s",
                     " ".join(_section("Rules", FLEET).split()))
    assert said, "docs/fleet.md no longer states the bounds as this test reads them"
    repeats, sigmas, iters, gib, *time_limit = (int(number.replace(",", "")) for number in said.groups())
    assert [repeats, sigmas, iters, gib << 30, *time_limit] == [MAX_REPEATS, MAX_SIGMAS, PROLOG_MAX_ITERS, PROLOG_MAX_BYTES, *PROLOG_TIME_S]


def test_doctors_table_names_the_rules_doctor_judges():
    from wirewise.orchestrator.health.findings import LIVE_RULES
    from wirewise.orchestrator.health.judge import HISTORY_RULES

    named = [cells[0].strip("`") for cells in _rows(_section("`wirewise doctor [--node N] [--rules FILE]`", RESULTS))]
    assert sorted(named) == sorted(HISTORY_RULES + LIVE_RULES)


def test_doctor_json_keys_are_doctors(tmp_path):
    from wirewise.orchestrator.health.doctor import FLAGGED, HEALTHY, doctor
    from wirewise.orchestrator.health.findings import Finding
    from wirewise.orchestrator.store import Store

    keys = list(doctor(Store(f"sqlite:///{tmp_path / 'empty.db'}"), record=False))
    listed = _listed_keys("`wirewise doctor --json`")
    assert [k for k in dict.fromkeys(listed) if k in keys] == keys
    finding = Finding("n1", "wiring-changed", "", "").to_json()
    assert set(listed) == set(keys) | set(finding) | {HEALTHY, FLAGGED}


def test_the_baselines_file_and_the_stores_outputs_are_what_the_commands_write(tmp_path):
    """The format, version and keys docs/fleet.md and docs/contracts.md give the baselines file
    are those of a file `baseline export` wrote (from an imported nccl-tests log), and the
    versions fleet.md says import reads are the ones it reads; the --json keys contracts.md
    lists for baseline export and import, db info and topo save are what they print."""
    from wirewise.orchestrator.health.baseline import READS

    url = f"sqlite:///{tmp_path / 'wirewise.db'}"
    log = FIXTURES / "nccl-tests" / "nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt"
    topology = FIXTURES / "topo" / "h100-sxm-8gpu-nvswitch-12nic-numaoff.txt"
    wirewise("import", "nccl-tests", str(log), "--topology-file", str(topology), "--db", url, check=True)
    written = json.loads(wirewise("baseline", "export", "--out", "-", "--db", url, check=True).stdout)
    wiring, entry = next(iter(written["wirings"].values())), written["baselines"][0]
    exported = wirewise_json("baseline", "export", "--out", str(tmp_path / "baselines.json"), "--db", url)
    assert _keys_said("wirewise baseline export --json")[:len(exported)] == list(exported)
    imported = wirewise_json("baseline", "import", str(tmp_path / "baselines.json"), "--db", f"sqlite:///{tmp_path / 'other.db'}")
    assert _keys_said("baseline import --json") == list(imported)
    assert _keys_said("wirewise db info --json") == list(wirewise_json("db", "info", "--db", url))
    saved = wirewise_json("topo", "save", "--from-file", str(QUADS), "--node", "n2", "--db", url)
    assert _keys_said("wirewise topo save --json") == list(saved)

    said = re.search(r'`\{"format": "([\w-]+)", "version": (\d+), "wirings": \{FINGERPRINT: \{([^}]*)\}\}, '
                     r'"baselines": \[\{([^}]*)\}\]\}`', " ".join(FLEET.split()))
    assert said, "docs/fleet.md no longer shows the file's shape"
    assert (said[1], int(said[2])) == (written["format"], written["version"])
    assert said[3].split(", ") == list(wiring)
    assert said[4].split(", ") == list(entry)
    assert list(written) == ["format", "version", "exported_at", "wirings", "baselines"]
    listed = _listed_keys("`wirewise baseline export --json`")
    assert listed[listed.index("format"):listed.index("format") + 5] == list(written)
    assert listed[listed.index("baselines", listed.index("format")) + 1:][:len(entry)] == list(entry)

    first, last = map(int, re.search(r"Import reads versions (\d+) to (\d+)", " ".join(FLEET.split())).groups())
    assert tuple(range(first, last + 1)) == READS


def test_the_readme_command_table_has_every_command():
    """Each command of the app (read from it) has its row in README.md's table of commands,
    as `wirewise GROUP CMD ...` or a sub-command beside its group's (`... / resume`)."""
    from tests.test_references import cli, command_lines, command_path

    said = set()
    for row in (ROOT / "README.md").read_text().splitlines():
        if row.startswith("| `wirewise "):
            said |= {" ".join(command_path(words)[1][1:]) for words, _ in command_lines(row.split(" | ")[0], False)}

    def leaves(command, path=()):
        if not hasattr(command, "commands"):
            return [" ".join(path)]
        return [leaf for name, sub in command.commands.items() for leaf in leaves(sub, (*path, name))]

    assert sorted(set(leaves(cli())) - said) == []


def test_launch_dry_run_json_keys_are_the_advice_and_the_start(tmp_path):
    """`wirewise launch --dry-run --json` on two CPU ranks prints the keys contracts.md lists."""
    shown = json.loads(wirewise("launch", "--model", "tiny-mistral", "--cpu", "--gpus", "2", "--dry-run", "--json", "--db",
                                f"sqlite:///{tmp_path / 'wirewise.db'}", "--", str(ROOT / "docs" / "examples" / "finetune.py"),
                                check=True).stdout)
    assert sorted(_listed_keys("`wirewise launch --dry-run --json`")) == sorted(shown)
