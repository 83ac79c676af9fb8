"""wirewise: the contracts that both sides of the tool import.

The control plane (`wirewise.orchestrator`: CLI, campaigns, store, placement, reports) and
the compute side (`wirewise.jobs`: rank launch, collectives, training) never import each
other's internals; what they share lives here, torch-free:

- `wirewise.task`: the task spec a compute node runs, with its deterministic task key;
- `wirewise.workloads`: the workload registry and each workload's parameter model and rules;
- `wirewise.record`: the result record, its statuses and the `extra` keys both sides read (`Extra`);
- `wirewise.topology`: the wiring model and the pure code to parse, classify and fingerprint it;
- `wirewise.models`: the model registry (configs, no weights);
- `wirewise.ranges`: range lists such as `0-3,8` (GPU indices, counts, CPU lists), bounded;
- `wirewise.nvml`: the one way to NVML, its quirks handled once;
- `wirewise.registry`, `wirewise.strategy`: every plug-in by name, and each training strategy's
  descriptor (what it shards, its traffic per step, its engine configs);
- `wirewise.configs`: a strategy's accelerate and DeepSpeed configs, rendered from templates/;
- `wirewise.launch_file`: what `wirewise launch` decided for a job, as its ranks read it back;
- `wirewise.jobenv`: the one reader of the scheduler's environment (the Slurm job and its nodes,
  the GPUs by nvidia-smi's index, the ranks), for both sides;
- `wirewise.dtypes`: the element types, their sizes and nccl-tests' names for them;
- `wirewise.errors`, `wirewise.atomic`, `wirewise.versions`, `wirewise.runs`: small shared pieces.

Nothing in this package imports `wirewise.orchestrator` or `wirewise.jobs` (tests/test_architecture.py),
but for one lazy edge: `wirewise.advice` (and its types) resolve through `wirewise.orchestrator.api`
on first use, so a training script imports one name (docs/launch.md).
"""

__version__ = "0.2.0"

# The package's front door for training scripts (`wirewise.advice(...)`, docs/launch.md): the
# control plane computes it, so it is looked up there on first use, never at `import wirewise`.
_FRONT_DOOR = ("advice", "Advice", "AdviceError", "StrategyAdvice")


def __getattr__(name: str):
    if name in _FRONT_DOOR:
        import wirewise.orchestrator.api as api

        return getattr(api, name)
    raise AttributeError(f"module 'wirewise' has no attribute {name!r}")
