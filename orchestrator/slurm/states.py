"""What wirewise changes about nodes: drain with a reason, resume, and the maintenance
reservations re-tests run in. Each is one command through the runner; reading the nodes'
states is wirewise.orchestrator.slurm.nodes.slurm_nodes (one `sinfo -N`, SlurmNode).

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

from wirewise.orchestrator.slurm.command import slurm


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
