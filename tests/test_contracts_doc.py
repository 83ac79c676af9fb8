"""docs/contracts.md against the code: the documented keys and fields are the ones the code
produces, the topology example is what `topo show --json` prints, and nothing points to a
design file the repository does not hold (issue 10 item 16)."""

from __future__ import annotations

import json
import re

from tests.conftest import FIXTURES, ROOT, wirewise_json

DOC = (ROOT / "docs" / "contracts.md").read_text()
QUADS = FIXTURES / "topo" / "synthetic-h200-nvl-8gpu-two-quads.txt"


def _section(title: str) -> str:
    return DOC.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


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


def test_topology_keys_and_example_are_what_topo_show_prints():
    shown = wirewise_json("topo", "show", "--from-file", str(QUADS))
    assert _table_names(_section("Topology")) == list(shown)
    example = json.loads(_section("Topology").split("```json", 1)[1].split("```", 1)[0])
    assert example == shown


def test_result_record_fields_are_the_models():
    from wirewise.record import ResultRecord

    assert sorted(_table_names(_section("Result record"))) == sorted(ResultRecord.model_fields)


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
