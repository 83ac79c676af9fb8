"""A finding: one rule that fired on one node, with what it rests on and what would show it
again. Findings are what `doctor` reports, what the store keeps as a node's verdict, what
`fleet drain` drains for (after a repeat of `measurement` confirms it) and what `fleet retest`
runs again.

The drain reason Slurm shows (`sinfo -R`) is `wirewise:<rule>:<metric>:<delta>`, e.g.
`wirewise:busbw-below-baseline:all_reduce.busbw:-12.4%`: the prefix says who drained it (so
wirewise never resumes a node someone else drained), the rest what fell and how far.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

REASON_PREFIX = "wirewise:"
RULES = ("busbw-below-baseline", "tokens-below-baseline", "slower-than-peers", "nvlink-inactive",
         "pcie-degraded", "fabric-degraded", "wiring-changed", "task-failed", "transport-off-nvlink", "pair-below-fleet")
LIVE_RULES = ("nvlink-inactive", "pcie-degraded", "fabric-degraded", "wiring-changed")  # read on the node itself (NVML)


@dataclass(frozen=True)
class Finding:
    node: str
    check: str  # the rule's name (RULES)
    evidence: str
    advice: str
    metric: str = ""  # what fell: "all_reduce.busbw", "gpu1.nvlink", ...
    delta: str = ""  # how far, as the drain reason says it: "-12.4%", "-2", "changed", "failed"
    gpus: list[int] | None = None  # the GPUs it concerns; None: the node as a whole
    key: str = ""  # the case it is about: a later judgement of the same rule and case replaces it
    # What to run again to confirm or re-test it (None: the rule reads NVML on the node), and
    # what that run is judged against (a finding's own reference, so a re-test is judged as
    # the finding was).
    measurement: dict[str, Any] | None = None
    reference: dict[str, Any] = field(default_factory=dict)

    @property
    def reason(self) -> str:
        return drain_reason(self.check, self.metric, self.delta)

    @property
    def severity(self) -> tuple[bool, float]:
        """The order findings lead a drain in: a live fault first (hardware), then the largest
        drop (the most negative delta; a delta that is no number counts as none)."""
        try:
            drop = float(self.delta.rstrip("%"))
        except ValueError:
            drop = 0.0
        return (self.check not in LIVE_RULES, drop)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "reason": self.reason}


def drain_reason(rule: str, metric: str, delta: str) -> str:
    """`wirewise:<rule>:<metric>:<delta>`, one line (Slurm keeps the reason as given)."""
    return f"{REASON_PREFIX}{rule}:{metric or 'node'}:{delta or '-'}".replace("\n", " ")


def is_ours(reason: str | None) -> bool:
    return bool(reason) and reason.startswith(REASON_PREFIX)


def percent(drop: float) -> str:
    """A relative change as the reason says it: -0.124 -> '-12.4%'."""
    return f"{drop * 100:+.1f}%"


def from_json(doc: dict[str, Any]) -> Finding:
    return Finding(**{k: v for k, v in doc.items() if k in Finding.__dataclass_fields__})
