"""JUnit XML for CI pipelines that gate maintenance on wirewise (`doctor`, `campaign status` and
`fleet pairs` with `--junit FILE`): one test suite, a test case per thing judged (a rule on a
node, a campaign task, a pair of nodes), failed with its evidence as the message and body, skipped where
nothing was run or judged. The schema is the one JUnit readers share (Jenkins, GitLab, ReFrame's
--report-junit): testsuites > testsuite(name, tests, failures, skipped) > testcase(classname,
name) with an optional failure or skipped child. xml.etree escapes the text; the file is written
whole (wirewise.atomic).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


@dataclass(frozen=True)
class Case:
    classname: str  # what holds it: the node, the campaign
    name: str  # the rule, the task
    outcome: str  # PASSED, FAILED or SKIPPED
    message: str = ""  # the evidence (failed) or why it was not run (skipped)
    body: str = ""  # the evidence in full, where longer than a message


def junit_text(suite: str, cases: list[Case]) -> str:
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites")
    element = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cases)),
                            failures=str(sum(c.outcome == FAILED for c in cases)),
                            skipped=str(sum(c.outcome == SKIPPED for c in cases)), errors="0")
    for case in cases:
        child = ET.SubElement(element, "testcase", classname=case.classname, name=case.name)
        if case.outcome == FAILED:
            ET.SubElement(child, "failure", message=case.message).text = case.body or case.message
        elif case.outcome == SKIPPED:
            ET.SubElement(child, "skipped", message=case.message)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(path: Path, suite: str, cases: list[Case]) -> None:
    from wirewise.atomic import write_text_atomic

    write_text_atomic(path, junit_text(suite, cases))


def doctor_cases(found: dict) -> list[Case]:
    """A case per rule per node doctor looked at: failed with the finding's evidence, passed where
    the rule compared something of the node, skipped where it could not (no baseline, peers, live
    reading)."""
    cases = []
    for node in found["nodes"]:
        fired: dict[str, list[str]] = {}
        for finding in found["findings"]:
            if finding["node"] == node:
                fired.setdefault(finding["check"], []).append(finding["evidence"])
        for rule in found["rules_asked"][node]:
            if rule in fired:
                cases.append(Case(node, rule, FAILED, fired[rule][0], "\n".join(fired[rule])))
            elif rule in found["judged"][node]:
                cases.append(Case(node, rule, PASSED))
            else:
                cases.append(Case(node, rule, SKIPPED, "not judged: nothing to compare with (no baseline, peers or live reading)"))
    return cases




def campaign_cases(state, errors: dict[str, str]) -> list[Case]:
    """A case per task of a campaign (track.CampaignStatus): passed when ok, failed when it ended
    otherwise (oom, failed, timeout, cancelled, or missing: gone from Slurm without a result),
    with the run's error where `errors` (by task) has one; skipped while pending or running."""
    cases = []
    for task in state.tasks:
        where = f" on {task.node}" if task.node else ""
        if task.status == "ok":
            cases.append(Case(state.campaign.name, task.task_id, PASSED))
        elif task.status in ("pending", "running"):
            cases.append(Case(state.campaign.name, task.task_id, SKIPPED, f"{task.status}: not finished{where}"))
        else:
            message = f"{task.status} (attempt {task.attempt}){where}"
            cases.append(Case(state.campaign.name, task.task_id, FAILED, message, errors.get(task.task_id) or message))
    return cases


def pair_cases(report: dict) -> list[Case]:
    """A case per pair test of `fleet pairs` (its report): passed at or above the fleet's floor,
    failed when slow or failed (with the verdict it led to: the bad node or link); a node left
    out or never tested is a skipped case of its own."""
    from wirewise.units import gbs_text

    suite = report["campaign"]
    cases = []
    for pair in report["pairs"]:
        name = "-".join(sorted(pair["nodes"]))
        if pair["status"] == "ok":
            cases.append(Case(suite, name, PASSED))
            continue
        floor = _floor_of(report, pair)
        floor = gbs_text(floor) if floor is not None else "no floor (nothing measured)"
        where = f" ({pair['scope']})" if pair.get("scope") else ""
        said = pair.get("error") or f"{gbs_text(pair['busbw_gbs'])} below the floor {floor}{where}"
        blamed = [f"bad node {n}: best pair {gbs_text(report['evidence']['nodes'][n]['busbw_gbs'])}"
                  for n in pair["nodes"] if n in report["bad_nodes"]]
        blamed += [f"bad pair: {p['why']}" for p in report["evidence"]["pairs"] if sorted(p["nodes"]) == sorted(pair["nodes"])]
        cases.append(Case(suite, name, FAILED, f"{pair['status']}: {said}", "\n".join([f"{pair['status']}: {said}", *blamed])))
    cases += [Case(suite, node, SKIPPED, "not tested") for node in report["untested"]]
    cases += [Case(suite, left["node"], SKIPPED, f"left out: {left['reason']}") for left in report["left_out"]]
    return cases


def _floor_of(report: dict[str, Any], pair: dict[str, Any]) -> float | None:
    """The threshold a pair of a verdict's JSON (`fleet pairs --json`) was judged by: its
    scope's, else the verdict's one."""
    scope = report.get("scopes", {}).get(pair.get("scope"))
    return scope["threshold_gbs"] if scope else report["threshold_gbs"]


__all__ = ["Case", "FAILED", "PASSED", "SKIPPED", "campaign_cases", "doctor_cases", "junit_text", "pair_cases", "write_junit"]
