"""The history rules as pure functions of result rows (wirewise.orchestrator.health.judge): what a
finding keeps of the results it judged, for the measurement that repeats them."""

from __future__ import annotations

from wirewise.orchestrator.health.judge import judge_history
from wirewise.orchestrator.health.rules import default_rules

FINGERPRINT = "f" * 64


def collective(node: str, size: int, busbw: float, number: int) -> dict:
    """One ok all_reduce result as results.rows.result_rows gives it: with its case (wirewise.case)."""
    from wirewise.case import case_of, derive

    record = {"workload": "collective", "source": "wirewise", "op": "all_reduce", "bytes": size, "dtype": "float32",
              "in_place": False, "gpu_count": 8, "node_count": 1, "gpus": list(range(8)), "params": {}, "extra": {}}
    row = {**record, **derive(record)}
    return {**case_of(row), "workload": "collective", "case_key": row["case_key"], "id": number, "node": node,
            "status": "ok", "campaign": None, "fingerprint": FINGERPRINT, "gpus": 8, "placement": None,
            "busbw_gbs": busbw, "model": None, "strategy": None, "started_at": f"2026-12-01T10:{number:02d}"}


def test_a_finding_repeats_the_sizes_it_judged_to_the_byte():
    """nccl-tests and imported logs measure sizes such as 100,000,000 bytes, which the finding's
    label rounds ("97656.2K"); the sizes the repeat measures are the ones measured, not the
    labels read back (parse_size(bytes_text(b)) gave 99,999,948)."""
    sizes = (100_000_000, 3 * 2**30)
    history = []
    for node, busbw in (("a", 400.0), ("b", 401.0), ("c", 399.0), ("slow", 200.0)):
        for _ in range(3):
            history += [collective(node, size, busbw, len(history)) for size in sizes]
    found = judge_history(["slow", "a"], history, default_rules()).findings
    [finding] = found
    assert (finding.node, finding.check) == ("slow", "busbw-below-baseline")
    assert finding.measurement["sizes"] == [100_000_000, 3 * 2**30]
    assert "97656.2K: 200 GB/s vs 400" in finding.evidence  # the label people read
