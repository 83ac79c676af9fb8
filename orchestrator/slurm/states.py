"""Nodes' states and what wirewise changes about them: drain with a reason, resume, and the
maintenance reservations re-tests run in. Each is one command through the runner.

    node_states(partition)     `sinfo -N` (state, reason, who set it and when, partitions), by node
    states_if_slurm(nodes)     the same, or {} where there is no Slurm to ask
    drain(node, reason)        `scontrol update NodeName=X State=DRAIN Reason=...` (`sinfo -R` shows it)
    resume(node)               `scontrol update NodeName=X State=RESUME`
    reserve(name, node, ...)   `scontrol create reservation ... Flags=MAINT,IGNORE_JOBS,FLEX`
    unreserve(name)            `scontrol delete ReservationName=...`

A drained node runs no job, not even one in a reservation on it (tried on Slurm 22.05: "Required
node not available (down, drained or reserved)"). So a re-test reserves the node first (MAINT:
only the reservation's users; IGNORE_JOBS: at once), then resumes it (it shows
IDLE+MAINTENANCE+RESERVED, and no other job can start there), runs inside the reservation, drains
it again and only then deletes the reservation: at no moment can a user's job land on it.
FLEX lets a job of the reservation use nodes outside it as well: a pair test's re-test runs on
the reserved node and a known-good node that stays in service (without FLEX, Slurm 22.05
refuses it: "Problem using reservation ... Requested node configuration is not available").
"""

from __future__ import annotations

from dataclasses import dataclass

from wirewise.orchestrator.slurm.command import slurm

_FIELDS = "%N|%P|%T|%U|%H|%E"  # the reason last: it may hold the separator
# sinfo's long state names (%T) end in a flag: * not responding, ~ powered off, # powering up,
# ! powering down, % powered down, $ maintenance reservation, @ reboot pending, ^ rebooting, - planned.
_FLAGS = "*~#!%$@^-"


@dataclass(frozen=True)
class NodeState:
    name: str
    state: str  # sinfo's long state without its flag, lower case: idle, mixed, drained, draining, down, ...
    partitions: tuple[str, ...]
    reason: str | None  # None: no reason set
    reason_by: str | None  # who set the reason, as sinfo names them (root(0))
    reason_at: str | None
    responding: bool = True

    @property
    def drained(self) -> bool:
        """drained or draining (a drain is set)."""
        return "drain" in self.state

    @property
    def available(self) -> bool:
        """Takes jobs, by the one rule of wirewise.orchestrator.slurm.nodes.unavailable (a node
        that does not answer takes none)."""
        from wirewise.orchestrator.slurm.nodes import unavailable

        return unavailable(self.state + ("" if self.responding else "*")) is None

    def to_json(self) -> dict:
        return {"node": self.name, "state": self.state, "partitions": list(self.partitions), "reason": self.reason,
                "reason_by": self.reason_by, "reason_at": self.reason_at, "responding": self.responding}


def parse_sinfo(text: str) -> dict[str, NodeState]:
    """`sinfo -h -N -o '%N|%P|%T|%U|%H|%E'` lines -> NodeState by node (a node in several
    partitions is one line per partition)."""
    found: dict[str, NodeState] = {}
    for line in text.splitlines():
        parts = line.split("|", 5)
        if len(parts) != 6 or not parts[0].strip():
            continue
        name, partition, state, user, when, reason = (p.strip() for p in parts)
        flag = state[-1:] if state[-1:] in _FLAGS else ""
        state = state.rstrip(_FLAGS).lower()
        partition = partition.rstrip("*")
        before = found.get(name)
        partitions = tuple(sorted({*(before.partitions if before else ()), partition}))
        reason = None if reason in ("", "none", "(null)") else reason
        found[name] = NodeState(  # sinfo names a user and a time even where no reason is set
            name, state, partitions, reason, user if reason and user not in ("Unknown", "(null)") else None,
            when if reason and when not in ("Unknown", "(null)") else None, responding=flag != "*",
        )
    return found


def node_states(partition: str | None = None, nodes: list[str] | None = None) -> dict[str, NodeState]:
    args = ["-h", "-N", "-o", _FIELDS]
    if partition:
        args += ["-p", partition]
    if nodes:
        args += ["-n", ",".join(nodes)]
    return parse_sinfo(slurm("sinfo", *args) or "")


def states_if_slurm(nodes: list[str] | None = None) -> dict[str, NodeState]:
    """node_states(), or {} where this machine has no Slurm (no sinfo, or no controller answers:
    a laptop placing on stored wirings)."""
    from wirewise.orchestrator.slurm.command import SlurmError, available

    if not available("sinfo") or nodes == []:
        return {}
    try:
        return node_states(nodes=nodes)
    except SlurmError:
        return {}


def partition_nodes(states: dict[str, NodeState]) -> dict[str, list[str]]:
    """partition -> its nodes, from node_states()."""
    members: dict[str, list[str]] = {}
    for state in states.values():
        for partition in state.partitions:
            members.setdefault(partition, []).append(state.name)
    return {p: sorted(n) for p, n in sorted(members.items())}


def drain(node: str, reason: str) -> None:
    slurm("scontrol", "update", NodeName=node, State="DRAIN", Reason=reason)


def resume(node: str) -> None:
    slurm("scontrol", "update", NodeName=node, State="RESUME")


def reserve(name: str, nodes: list[str], minutes: int, users: str) -> None:
    """A maintenance reservation of `nodes` from now, for `users` only."""
    slurm("scontrol", "create", "reservation", ReservationName=name, Nodes=",".join(nodes), StartTime="now",
          Duration=str(minutes), Users=users, Flags="MAINT,IGNORE_JOBS,FLEX")


UNRESERVE_WAIT_S = 60.0  # a job of the reservation still completing (its epilog) holds it this long at most


def unreserve(name: str, wait_s: float = UNRESERVE_WAIT_S) -> None:
    """Delete the reservation. Slurm refuses while a job of it is still on its nodes ("Requested
    reservation is in use", seen on 22.05 a moment after the job's results were in): asked
    again each second until then."""
    import time

    from wirewise.orchestrator.slurm.command import SlurmError

    deadline = time.monotonic() + wait_s
    while True:
        try:
            slurm("scontrol", "delete", ReservationName=name)
            return
        except SlurmError as exc:
            if "in use" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(1.0)
