"""`wirewise fleet`: the nodes of a cluster as one fleet. Each command's body lives in its own
module; one line here each."""

from wirewise.orchestrator.cli import fleet_health
from wirewise.orchestrator.cli.common import command_group

app = command_group("The fleet: each node's verdict, drain, re-test, resume.")
app.command("status")(fleet_health.status)
app.command("drain")(fleet_health.drain)
app.command("retest")(fleet_health.retest)
app.command("resume")(fleet_health.resume)
