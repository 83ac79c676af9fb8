"""Rules files and baselines, as processes, on the report tests' history (conftest.py: the H100
nccl-tests log imported for four nodes of one wiring).

- `doctor --rules FILE`: a file laid over the defaults changes the verdict; a bad one is one
  line naming the file and the field, exit 2.
- `baseline export` / `import`: a node type's baselines travel to a fresh database, where a
  node of that wiring with no history of its own is judged by them.
- `doctor --health-check` imports no torch (a torch that cannot be imported stands first on
  the path) and reads NVML (the fake module of tests/report/fake_nvml: no GPU exists here).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.conftest import ROOT, wirewise, wirewise_json
from tests.report.conftest import import_log
from tests.report.test_doctor import doctor, fake_nvml
from wirewise.topology.probe import short_hostname


def test_a_rules_file_changes_the_verdict(report_db, tmp_path):
    import_log(tmp_path, report_db, "h100-a", 0.5)  # its median of 2 results: -25%
    lenient = tmp_path / "lenient.yaml"
    lenient.write_text("rules:\n  busbw-below-baseline:\n    max_drop: 0.3\n")
    assert doctor(report_db, "--node", "h100-a")[0] == 1
    code, found = doctor(report_db, "--node", "h100-a", "--rules", str(lenient))
    assert (code, found["findings"], found["rules"]) == (0, [], str(lenient))
    off = tmp_path / "off.yaml"
    off.write_text("rules: {busbw-below-baseline: {enabled: false}}\n")
    code, found = doctor(report_db, "--node", "h100-a", "--rules", str(off))  # the one rule with results to read is off
    assert (code, found["verdicts"]) == (3, {"h100-a": "not judged"})


def test_the_report_judges_by_the_sites_rules(report_db, tmp_path):
    """`wirewise report`'s "What doctor flags" is doctor on the history by the site's rules (the
    setting rules, as `doctor` reads it), not the shipped ones: h100-a's -25% is flagged by the
    shipped 5% drop, not under a site's 30%; with a rules file it cannot read the report is still
    written, without doctor's section (doctor cannot judge)."""
    import_log(tmp_path, report_db, "h100-a", 0.5)
    lenient = tmp_path / "lenient.yaml"
    lenient.write_text("rules:\n  busbw-below-baseline:\n    max_drop: 0.3\n")

    def doctor_says(rules: str | None) -> str:
        written = wirewise_json("report", "--out", str(tmp_path / "out"), "--node", "h100-a", "--db", report_db,
                                env={"WIREWISE_RULES": rules})
        return " ".join(" ".join(s["sentences"]) for s in written["summary"] if s["title"] == "What doctor flags")

    assert doctor_says(None).startswith("doctor flags 1 finding on 1 node (h100-a): h100-a: busbw-below-baseline:")
    assert doctor_says(str(lenient)).startswith("doctor flags nothing on 1 node (h100-a)")
    lenient.write_text("rules:\n  busbw-below-baseline:\n    max_drop: 3\n")
    assert doctor_says(str(lenient)) == ""


def test_a_bad_rules_file_is_one_line_naming_the_field(report_db, tmp_path):
    cases = {
        "rules: {busbw-below-baseline: {max_drop: 1.5}}": "rules.busbw-below-baseline.max_drop: Input should be less than 1",
        "rules: {busbw-below-baselin: {}}": "rules.busbw-below-baselin: unknown key (check its spelling; docs/fleet.md lists the keys)",
        "guardrails: {max_per_hour: 0}": "guardrails.max_per_hour: Input should be greater than or equal to 1",
        "rules: {slower-than-peers: {min_bytes: 12Q}}": "rules.slower-than-peers.min_bytes: '12Q': give bytes with an optional K, M or G suffix",
        "rules: [": "not valid YAML (line ",  # where the parser stopped: libyaml says the line after
        "- 1": "a rules file is a mapping",
    }
    for text, said in cases.items():
        path = tmp_path / "rules.yaml"
        path.write_text(text)
        proc = wirewise("doctor", "--rules", str(path), "--db", report_db)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith(f"wirewise: error: {path}: ") and said in proc.stderr, proc.stderr
    missing = wirewise("doctor", "--rules", str(tmp_path / "nowhere.yaml"), "--db", report_db)
    assert missing.returncode == 2 and "cannot read rules file" in missing.stderr


def test_baselines_travel_to_a_cluster_without_history(report_db, tmp_path):
    """Exported from the four H100 nodes, imported into a fresh database: a fifth node of the same
    wiring, alone there, is judged against them (it would otherwise be 'not judged')."""
    out = tmp_path / "h100.json"
    [fingerprint] = {t["fingerprint"] for t in wirewise_json("topo", "list", "--db", report_db) if t["node"] == "h100-a"}
    summary = wirewise_json("baseline", "export", "--fingerprint", fingerprint[:10], "--out", str(out), "--db", report_db)
    doc = json.loads(out.read_text())
    assert summary["fingerprints"] == [fingerprint] and summary["baselines"] == len(doc["baselines"]) == 20
    big = next(b for b in doc["baselines"] if b["case"]["bytes"] == 1 << 30 and not b["case"]["in_place"])
    assert (big["results"], big["nodes"], big["sources"], round(big["median"], 3)) == (4, 4, {"nccl-tests": 4}, 470.845)
    assert doc["wirings"][fingerprint]["gpus"] == 8

    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    done = wirewise_json("baseline", "import", str(out), "--db", fresh)
    assert (done["added"], done["replaced"]) == (20, 0)
    assert wirewise_json("baseline", "import", str(out), "--db", fresh)["replaced"] == 20  # again: replaced, not doubled
    import_log(tmp_path, fresh, "newcomer", 0.5)
    code, found = doctor(fresh, "--node", "newcomer")
    [finding] = found["findings"]
    assert code == 1 and "against the baseline of 4 results on 4 node(s), imported from h100.json" in finding["evidence"]
    import_log(tmp_path, fresh, "healthy-newcomer", 1.0)
    assert doctor(fresh, "--node", "healthy-newcomer")[0] == 0


def test_a_bad_baselines_file_changes_nothing(tmp_path):
    fresh = tmp_path / "fresh.db"
    for text, said in (("{}", "not a wirewise baselines file"), ("[", "not JSON"),
                       ('{"format": "wirewise-baselines", "version": 2, "baselines": [{"fingerprint": "ab"}]}',
                        "baselines[0].fingerprint"),
                       # version 1's cases lacked settings the case holds now (precision, nodes, ...)
                       ('{"format": "wirewise-baselines", "version": 1, "baselines": []}', "this wirewise reads versions 2, 3, 4")):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        proc = wirewise("baseline", "import", str(bad), "--db", f"sqlite:///{fresh}")
        assert proc.returncode == 2 and said in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert not fresh.exists()


def test_the_health_check_imports_no_torch_and_reads_nvml(report_db, tmp_path):
    poisoned = tmp_path / "poisoned"
    (poisoned / "torch").mkdir(parents=True)
    (poisoned / "torch" / "__init__.py").write_text("raise ImportError('the health check imported torch')\n")
    wirewise("topo", "save", "--db", report_db, env=fake_nvml(), check=True)
    env = fake_nvml()
    env["PYTHONPATH"] = os.pathsep.join([str(poisoned), env["PYTHONPATH"]])
    healthy = wirewise("doctor", "--health-check", "--report-only", "--json", "--db", report_db, env=env)
    assert healthy.returncode == 0, healthy.stderr
    assert json.loads(healthy.stdout)["healthy"] and json.loads(healthy.stdout)["node"] == short_hostname()
    faulty = {**env, "WIREWISE_FAKE_NVML": json.dumps({"inactive": {"1": [0, 1]}})}
    found = wirewise("doctor", "--health-check", "--report-only", "--json", "--db", report_db, env=faulty)
    assert found.returncode == 1, found.stderr
    outcome = json.loads(found.stdout)
    assert (outcome["drained"], [f["reason"] for f in outcome["findings"]]) == (False, ["wirewise:nvlink-inactive:gpu1.nvlink:-2"])
    assert outcome["seconds"] < 10


def test_a_health_check_that_could_read_nothing_is_not_judged_and_drains_nothing(tmp_path):
    """No NVML here (the real machine's view) and no finding open: the check says 'not judged'
    in a note and records no verdict. As slurmd runs it, exit 0 (nothing drained: Slurm is not
    even asked); with --report-only, exit 3, so a script does not read it as healthy."""
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    wirewise("db", "upgrade", "--db", url, check=True)  # a health check never makes the database: the site does
    for extra, code in (([], 0), (["--report-only"], 3)):
        proc = wirewise("doctor", "--health-check", *extra, "--json", "--node", "gpu-7", "--db", url)
        assert proc.returncode == code, proc.stderr
        outcome = json.loads(proc.stdout)
        assert (outcome["healthy"], outcome["drained"], outcome["findings"]) == (None, False, [])
        assert "gpu-7: no live rule could be read and no finding is open: not judged; nothing drained" in proc.stderr
    import sqlite3

    with sqlite3.connect(tmp_path / "fresh.db") as db:
        assert db.execute("SELECT count(*) FROM node_checks").fetchone() == (0,)  # no verdict recorded
    human = wirewise("doctor", "--health-check", "--node", "gpu-7", "--db", url)
    assert human.returncode == 0 and human.stdout.startswith("gpu-7: not judged (health-check")
