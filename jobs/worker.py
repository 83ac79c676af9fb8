"""One rank: `python -m wirewise.jobs.worker RUN_DIR`, started by wirewise.jobs.supervise with RANK etc. in the env.

It joins the process group, runs the workload's `run_rank(params, ctx)`, and writes
`rank<N>.json` atomically whatever happens. Only the supervisor turns rank files into
result records; ranks never touch the database.
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from wirewise.atomic import write_json_atomic
from wirewise.jobs.failures import describe_failure
from wirewise.jobs.rank import RankContext
from wirewise import registry
from wirewise.runs import RunPaths
from wirewise.task import TaskSpec

EXIT_OK, EXIT_FAILED = 0, 3


def _load_workload(name: str):
    return registry.load(registry.WORKLOADS[name])


def _select_device(ctx: RankContext):
    import torch

    # gloo ranks given GPU indices on a machine without CUDA run on CPU (the indices are still
    # recorded); NCCL always needs its GPU, so a missing one fails here loudly.
    if ctx.spec.gpus and (ctx.spec.backend == "nccl" or torch.cuda.is_available()):
        # The supervisor made exactly this node's task GPUs visible; rank i takes the i-th.
        torch.cuda.set_device(ctx.local_rank)
        return torch.device("cuda", ctx.local_rank)
    return torch.device("cpu")


def _init_process_group(ctx: RankContext) -> None:
    import torch.distributed as dist

    kwargs: dict[str, Any] = {"timeout": timedelta(seconds=ctx.spec.timeout_s)}
    if ctx.device.type == "cuda":
        kwargs["device_id"] = ctx.device  # eager NCCL init: a bad GPU fails here, not mid-run
    dist.init_process_group(backend=ctx.spec.backend, rank=ctx.rank, world_size=ctx.world_size, **kwargs)


def _shutdown(clean: bool) -> None:
    """A barrier before destroy avoids aborts at exit (docs/facts.md); after a failure, skip it."""
    import torch.distributed as dist

    if not dist.is_initialized():
        return
    if clean:
        dist.barrier()
        dist.destroy_process_group()


def run(run_dir: Path) -> int:
    spec = TaskSpec.model_validate_json(RunPaths(run_dir).spec.read_text())
    ctx = RankContext.from_env(spec, run_dir)
    outcome: dict[str, Any] = {"rank": ctx.rank, "status": "ok", "rows": [], "error": None}
    clean = False
    try:
        from wirewise.jobs.versions import software_versions

        ctx.device = _select_device(ctx)
        outcome["device"] = ctx.device.type  # what the records say they ran on: cuda or cpu
        outcome["versions"] = software_versions()
        _init_process_group(ctx)
        outcome["rows"] = _load_workload(spec.workload)(spec.params, ctx) or []
        clean = True
    except BaseException as exc:  # every outcome must reach the rank file
        outcome.update(describe_failure(exc, ctx.device))
        if not isinstance(exc, Exception):
            outcome["status"] = "failed"
    outcome["notes"] = ctx.notes
    write_json_atomic(RunPaths(run_dir).rank_outcome(ctx.rank), outcome)
    try:
        _shutdown(clean)
    except Exception:
        clean = False
    sys.stdout.flush()
    sys.stderr.flush()
    return EXIT_OK if clean else EXIT_FAILED


if __name__ == "__main__":
    # os._exit: after a failed collective, interpreter teardown can hang in NCCL/gloo threads.
    os._exit(run(Path(sys.argv[1])))
