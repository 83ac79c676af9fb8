"""`wirewise bench`: run a benchmark now on this machine and record it."""


from wirewise.orchestrator.cli.common import command_group

from wirewise.orchestrator.cli.bench_collectives import collectives
from wirewise.orchestrator.cli.bench_train import train

app = command_group("Run a benchmark here now and store it.\n\nRanks are spawned on this machine (GPUs pinned with CUDA_VISIBLE_DEVICES) through the same entry point Slurm tasks use.")
app.command("collectives")(collectives)
app.command("train")(train)
