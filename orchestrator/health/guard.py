"""The guardrails: how many nodes wirewise may take out of service on its own.

Two limits, from the rules file (rules.yaml states the defaults):
- max_share: at most this share of each partition unavailable at once (drained or down, by
  anyone: a partition half down for another cause is no place to drain more), and at least one
  node, so a small partition can still lose its one bad node;
- max_per_hour: at most this many drains by wirewise (fleet drain, health checks, prologs) in
  any 60 minutes.

A drain is claimed in the store under both limits in one transaction
(wirewise.orchestrator.store.health.claim_drains), so health checks firing on every node at
once still drain no more than the limits allow. Beyond them `fleet drain --apply` drains only
with a second confirmation: `--beyond-guardrails N`, N the number of nodes past the limits,
as its dry run states it.
"""

from __future__ import annotations

import getpass
import math
import os
import socket

from wirewise.orchestrator.health.rules import Guardrails
from wirewise.orchestrator.slurm.nodes import SlurmNode, partition_nodes


def asked_by(role: str | None = None) -> str:
    """Who asks, for the audit trail: the user (the one behind sudo, too) at this host, or a role
    such as `slurmd health check`."""
    host = socket.gethostname().split(".")[0]
    if role:
        return f"{role} on {host}"
    user = os.environ.get("SUDO_USER")
    try:
        me = getpass.getuser()
    except (KeyError, OSError):
        me = str(os.getuid())
    return f"{user} (as {me})@{host}" if user and user != me else f"{me}@{host}"


def share_limit(size: int, rails: Guardrails) -> int:
    return max(1, math.floor(rails.max_share * size + 1e-9))


class Budget:
    """Whether one more node may be drained now: the store calls it once per wanted drain,
    inside the claiming transaction (and a dry run, through store.health.drain_budget), with
    the drains of the last hour and the nodes claimed lately (drains Slurm may not show yet).
    `beyond` extra drains may pass the limits."""

    def __init__(self, rails: Guardrails, states: dict[str, SlurmNode], beyond: int = 0) -> None:
        self.rails = rails
        self.states = states
        self.members = partition_nodes(states)
        # what Slurm shows unavailable per partition: the states do not change while the budget is asked
        self.unavailable = {p: {n for n in members if not states[n].available} for p, members in self.members.items()}
        self.beyond = beyond
        self.passed_beyond: list[str] = []

    def partitions(self, node: str) -> list[tuple[str, list[str]]]:
        state = self.states.get(node)
        return [(p, self.members[p]) for p in (state.partitions if state else ())]

    def why_not(self, node: str, drained_last_hour: int, claimed: set[str]) -> str | None:
        """None when the node may be drained, else the guardrail it would break, in one line."""
        if drained_last_hour >= self.rails.max_per_hour:
            return (f"guardrail max_per_hour: wirewise drained {drained_last_hour} node(s) in the last hour "
                    f"(at most {self.rails.max_per_hour})")
        for partition, members in self.partitions(node):
            out = self.unavailable[partition] | (claimed & set(members))
            limit = share_limit(len(members), self.rails)
            if len(out | {node}) > limit:
                return (f"guardrail max_share: partition {partition} has {len(out)} of {len(members)} node(s) unavailable "
                        f"and allows {limit} (max_share {self.rails.max_share:g}, at least one)")
        return None

    def __call__(self, node: str, drained_last_hour: int, claimed: set[str]) -> str | None:
        why = self.why_not(node, drained_last_hour, claimed)
        if why is not None and self.beyond > 0:
            self.beyond -= 1
            self.passed_beyond.append(node)
            return None
        return why
