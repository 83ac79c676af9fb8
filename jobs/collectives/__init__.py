"""The collective bandwidth workload: nccl-tests' sweep, through torch.distributed.

- `ops`: one small descriptor per collective (sizes, bus-bandwidth factor, data, the call);
- `loop`: the one timing and checking loop, `run_rank(params, ctx)`, run by wirewise.jobs.worker.

Every caller (the local command, a submitit task, a Slurm step) runs it through
wirewise.jobs.supervise.run_task; nothing here knows how ranks were started. What a sweep asks for
(`wirewise.workloads.collective.CollectiveParams`: pydantic, no torch) lives in the contract,
shared by the CLI and the ranks.
"""
