"""Pair tests in the loop: what `wirewise fleet pairs` names becomes each node's verdict, and a
pair finding is repeated by the same pair test (wirewise.orchestrator.fleet.pairs, one way to
run one) of the node against a known-good node.

- After `fleet pairs`, each node the verdict judged gets a check by the pair-below-fleet rule:
  a bad node a finding (reason `wirewise:pair-below-fleet:<op>.busbw:<delta>`, the delta its
  best pair against the fleet's median), a known-good node none (clearing an earlier one). A
  suspect (only in bad pairs, never beside a known-good node) and an untested node are not
  judged; a slow link between two good nodes is a link, not a node: no finding either.
- The finding keeps the test (op, size, iterations, backend, ranks per node, timeout), the
  nodes known good in that run whose pair with it has the fabric scope it was found in (inside
  one NVLink domain, or over the network), and the floor it was judged by: (1 - tolerance) x
  its scope's median. A repeat passes at or above that floor, so a re-test is judged as the
  finding was, against a partner of the same scope.
"""

from __future__ import annotations

from typing import Any

from wirewise.units import gbs_text
from wirewise.orchestrator.health.findings import Finding, percent
from wirewise.orchestrator.health.rules import Rules

RULE = "pair-below-fleet"


def pair_tests(store, scope, mode: str, test, tolerance: float | None, name: str | None, rules: Rules,
               on_round=None) -> dict[str, Any]:
    """`fleet pairs`: the tests (at the rules' tolerance unless one is given), and their verdict
    recorded as the nodes' checks. The report lists the findings it opened (`findings`)."""
    from wirewise.orchestrator.fleet.pairs import run_pair_tests

    rule = rules.rules.pair_below_fleet
    report = run_pair_tests(store, scope, mode, test, rule.tolerance if tolerance is None else tolerance, name,
                            on_round=on_round)
    report["findings"] = record_verdict(store, report, test) if rule.enabled else []
    return report


def record_verdict(store, report: dict[str, Any], test) -> list[dict[str, str]]:
    """Each judged node's check by the pair rule; returns the findings opened ({node, reason})."""
    from wirewise.orchestrator.store.health import record_check

    judged = [n for n in report["nodes"] if n in report["known_good"] or n in report["bad_nodes"]]
    opened = []
    for node in judged:
        found = [pair_finding(node, report, test)] if node in report["bad_nodes"] else []
        record_check(store, node, "pairs", {RULE}, found)
        opened += [{"node": f.node, "reason": f.reason} for f in found]
    return opened


def pair_finding(node: str, report: dict[str, Any], test) -> Finding:
    from wirewise.units import bytes_text

    evidence = report["evidence"]["nodes"][node]
    op, size = report["op"], report["bytes"]
    ratio = evidence["ratio"]
    tests = ", ".join(f"{p['with']} {gbs_text(p['busbw_gbs'])}" for p in evidence["pairs"])
    said = (f"every test failed, its partners being healthy" if evidence["busbw_gbs"] is None else
            f"best pair {gbs_text(evidence['busbw_gbs'])} busbw, {ratio:.0%} of the fleet's {gbs_text(evidence['reference_gbs'])}"
            + (f" ({evidence['scope']})" if evidence.get("scope") else ""))
    return Finding(
        node, RULE, f"pair test {report['campaign']}, {op} at {bytes_text(size)}: {said}; its tests: {tests}",
        "check the node's network link (`ip -s link`, `ethtool`, the switch port, its NIC's firmware); "
        "`wirewise fleet drain --apply` repeats the test against a healthy node before it drains",
        metric=f"{op}.busbw", delta="failed" if ratio is None else percent(ratio - 1),
        key=f"{RULE}|{op}|{size}|{report['backend']}",
        measurement={"workload": "pairs", "scope": evidence.get("scope"), "partners": evidence["partners"],
                     "test": {"op": op, "size": size, "iters": test.iters, "warmup": test.warmup,
                              "backend": report["backend"], "gpus": report["ranks_per_node"], "timeout_s": test.timeout_s}},
        reference={"workload": "pairs", "metric": "busbw_gbs", "reference_gbs": evidence["reference_gbs"],
                   "floor": evidence["threshold_gbs"], "tolerance": report["tolerance"], "campaign": report["campaign"]},
    )


# -- the repeat: the node against a known-good one --------------------------------------------
def is_pair(finding: dict[str, Any]) -> bool:
    return finding["rule"] == RULE and bool((finding["measurement"] or {}).get("test"))


def partner_for(finding: dict[str, Any], busy: set[str], usable: set[str]) -> str | None:
    """A known-good node of the finding's run that takes work and is not itself being judged."""
    return next((n for n in finding["measurement"]["partners"] if n in usable and n not in busy), None)


def pair_test(finding: dict[str, Any]):
    from wirewise.orchestrator.fleet.pairs import PairTest

    test = finding["measurement"]["test"]
    return PairTest(op=test["op"], size=test["size"], iters=test["iters"], warmup=test["warmup"],
                    backend=test["backend"], gpus=test["gpus"], timeout_s=test["timeout_s"])


def repeat_verdict(finding: dict[str, Any], measure) -> tuple[bool, str]:
    """(failing, evidence) of the repeat against the finding's floor."""
    floor = finding["reference"]["floor"]
    partner = next(n for n in measure.nodes if n != finding["node"])
    if measure.busbw_gbs is None:
        return True, f"repeat against {partner} failed: {measure.error}"
    below = floor is not None and measure.busbw_gbs < floor
    where = "below" if below else "at or above"
    return below, f"repeat against {partner}: {gbs_text(measure.busbw_gbs)} busbw, {where} the floor {gbs_text(floor)}"
