"""Every time in every JSON output is ISO 8601 with its zone (docs/contracts.md), on SQLite as on
PostgreSQL: SQLite gives stored times back as text without one, which went out as it came
("2026-12-04 17:35:27.634878") until the store read every time back in one place (Dialect.when)."""

from __future__ import annotations

from tests.cli.hostile_pass import times_in, zoned
from tests.conftest import FIXTURES, wirewise_json

SPEC = """name: zoned
workloads: [{collectives: {ops: [all_reduce], min_bytes: 1K, max_bytes: 1K, iters: 1, warmup: 0}}]
axes: {gpus: [2], repeats: 1}
target: {executor: local, timeout_s: 120}
"""


def test_every_time_in_json_output_carries_its_zone(url, tmp_path):
    """A stored wiring's first and last sighting, a campaign's creation, on both databases
    (`url`: tests/report/conftest.py)."""
    db_url = url
    wirewise_json("topo", "save", "--from-file", str(FIXTURES / "topo" / "synthetic-h200-nvl-8gpu-two-quads-named.txt"),
                  "--node", "n1", "--db", db_url)
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    wirewise_json("campaign", "submit", str(spec), "--db", db_url, env={"WIREWISE_RUNS": str(tmp_path / "runs")})
    for command in (("topo", "list"), ("campaign", "list")):
        found = times_in(wirewise_json(*command, "--db", db_url))
        assert found, f"{command}: no time in the output to check"
        for text in found:
            assert zoned(text), f"{command}: {text!r}"
