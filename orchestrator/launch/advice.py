"""Advice for the job this process is part of: which GPUs, which strategy, and the accelerate
configuration that runs it. `wirewise.advice()` returns it to a script; `wirewise launch` starts
the job with it. Torch-free: a script asks before it builds its Accelerator.

    advise_job(model=..., batch_size=..., seq_len=...) -> Advice

The steps, each the one module that does it elsewhere:
1. what the job was given (allocation.py: SLURM_*, CUDA_VISIBLE_DEVICES, the node's wiring);
2. which of its GPUs, when it holds more than the job asks for: the placement module's best
   set by predicted busbw (`wirewise place`, measured history where stored);
3. which strategy: the advisor (`wirewise place --model`), measured tokens/s where stored;
   `strategy=` (or `--strategy`) overrides it, and inside a job that was given one
   (WIREWISE_STRATEGY, from `wirewise launch` or `wirewise run`) that one is what runs;
4. the accelerate launcher config of that strategy, from its descriptor's templates
   (wirewise.configs), with its DeepSpeed config where it runs on DeepSpeed.

On CPU ranks only DDP runs as itself through accelerate (wirewise.configs.cpu_refusal): an
advised fsdp or ZeRO stage there falls back to ddp, saying so; asked for by name, it is an
error. Across several nodes the network between them is not modelled: the advisor is given no
busbw for the slowest wire and follows its rules for an unknown one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from wirewise import registry
from wirewise.errors import UserError
from wirewise.settings import STRATEGY
from wirewise.orchestrator.launch.allocation import Allocation, read_allocation

AUTO = "auto"
CONFIG_FILE, DEEPSPEED_FILE = "accelerate.yaml", "deepspeed.json"


@dataclass(frozen=True)
class StrategyAdvice:
    """One strategy on the chosen GPUs: whether it fits, memory and speed, and what they rest on."""

    strategy: str
    fits: bool | None  # None: the GPU's memory is not known
    memory_gb: float  # per GPU, 10^9 bytes
    memory_basis: str  # "model", or "measured" where stored peaks calibrated it
    memory_sources: list[str]  # where those peaks come from: wirewise (benchmarks), job (real jobs)
    tokens_per_s: float | None  # over all ranks; None where the model cannot say (GPU peak unknown)
    tokens_basis: str  # "measured" (median of stored results on this wiring and set shape), "fitted" (the step
    # model fitted to the wiring's stored training results) or "model" (wirewise.orchestrator.advise.strategy)
    results: int  # how many stored results the measured figure rests on
    sources: list[str]  # where they come from: wirewise, job
    runs_here: bool  # runs as itself on this job's device through accelerate


@dataclass(frozen=True)
class Advice:
    """What to run and why. `accelerate_config` is the launcher config (`accelerate launch
    --config_file`) as a dict; `write_config(folder)` writes it (and the DeepSpeed config it names)
    as files. Its `deepspeed_config_file` is "deepspeed.json", relative to that folder, until written."""

    strategy: str | None  # what runs; None: nothing fits (and no strategy was named)
    chosen_by: str  # "advice", "strategy=" (--strategy), or the WIREWISE_STRATEGY the job was given
    advised: str | None  # the advisor's pick
    reasons: list[str]
    model: str
    params: int
    batch_size: int
    seq_len: int | None
    device: str  # cuda | cpu
    nodes: list[str]
    processes_per_node: int
    gpus: list[int]  # physical GPU indices on each node; [] for CPU ranks
    cuda_visible_devices: str | None  # the chosen GPUs as this job names them (Slurm may renumber)
    assigned_gpus: list[int]  # GPUs placed on the wiring that CPU ranks stand in for (a test cluster)
    placement: dict[str, Any] | None  # `wirewise place --json` for the chosen set; None without a wiring
    strategies: list[StrategyAdvice]
    accelerate_config: dict[str, Any] | None
    deepspeed_config: dict[str, Any] | None
    slurm_job_id: str | None = None
    topology: dict[str, Any] | None = field(default=None, repr=False)  # the node's wiring (Topology JSON)

    @property
    def num_processes(self) -> int:
        return self.processes_per_node * len(self.nodes)

    def row(self, strategy: str | None = None) -> StrategyAdvice | None:
        """The advice for one strategy (default: the one that runs)."""
        wanted = strategy or self.strategy
        return next((row for row in self.strategies if row.strategy == wanted), None)

    def write_config(self, folder: str | Path) -> Path:
        """accelerate.yaml (and deepspeed.json) in `folder`; returns the accelerate file's path."""
        from wirewise.atomic import write_json_atomic, write_text_atomic

        if self.accelerate_config is None:
            raise UserError("no strategy fits: there is no configuration to write (name one with strategy=)")
        import yaml

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        config = self.config_in(folder)
        if self.deepspeed_config is not None:
            write_json_atomic(folder / DEEPSPEED_FILE, self.deepspeed_config)
        path = folder / CONFIG_FILE
        write_text_atomic(path, yaml.safe_dump(config, sort_keys=False))
        return path

    def config_in(self, folder: str | Path) -> dict[str, Any] | None:
        """The launcher config as written into `folder` (the DeepSpeed file's path made absolute)."""
        if self.accelerate_config is None:
            return None
        config = {**self.accelerate_config}
        if "deepspeed_config" in config:
            config["deepspeed_config"] = {**config["deepspeed_config"],
                                          "deepspeed_config_file": str(Path(folder).resolve() / DEEPSPEED_FILE)}
        return config

    def to_dict(self) -> dict[str, Any]:
        found = asdict(self)
        found.pop("topology")
        topo = self.topology or {}
        return {**found, "num_processes": self.num_processes, "fingerprint": topo.get("fingerprint"),
                "fabric": topo.get("fabric")}


def advise_job(
    model: str | None = None,
    *,
    params: int | None = None,
    batch_size: int = 1,
    seq_len: int | None = None,
    gpus: int | None = None,
    strategy: str | None = None,
    topology_file: str | Path | None = None,
    db: str | None = None,
    accounting: str = "article",
    gpu_mem_gb: float | None = None,
    cpu: bool = False,
    env: Mapping[str, str] | None = None,
    option: str = "strategy=",
) -> Advice:
    """The advice for a job of `model` (a registry name or a transformers config) or of `params`
    parameters, `batch_size` samples of `seq_len` tokens per rank, on `gpus` GPUs per node
    (default: every GPU the job holds, or every idle one here). `cpu`: CPU ranks (gloo) even
    where GPUs answer, placed on the wiring all the same. `option` names `strategy` in messages
    (the CLI's --strategy)."""
    from wirewise.orchestrator.advise.estimate import check_sizes
    from wirewise.orchestrator.placement.history import History
    from wirewise.jobenv import read_job_env
    from wirewise.orchestrator.store import Store

    params = check_arguments(model=model, params=params, batch_size=batch_size, seq_len=seq_len, gpus=gpus,
                             strategy=strategy, topology_file=topology_file, db=db, accounting=accounting,
                             gpu_mem_gb=gpu_mem_gb, cpu=cpu, env=env)
    env = os.environ if env is None else env
    check_sizes(1 if gpus is None else gpus, batch_size, seq_len)  # place's and estimate's bounds, before any list of ranks
    shape = _shape(model, params, seq_len)
    named = _named_strategy(strategy, env, option)
    allocation = read_allocation(env, Path(topology_file) if topology_file else None)
    if cpu:
        allocation = replace(allocation, live=False)
    store = Store.open_existing(db)
    # the wiring's measured history, read once for placement and advice
    history = History(store, allocation.topo) if store is not None and allocation.topo is not None else None
    placement, per_node, reasons = _placement(allocation, gpus, history, "--cpu" if cpu else "no NVIDIA driver answers here")
    on_gpu = allocation.live and placement is not None
    ranks = per_node * len(allocation.nodes)
    advice = _advice(allocation, placement, shape, ranks, store, history, batch_size, seq_len, accounting, gpu_mem_gb)
    chosen, chosen_by, why = _choose(advice["strategy"], named, on_gpu)
    configs = _configs(chosen, model, ranks, len(allocation.nodes), on_gpu)
    chosen_gpus = placement["gpus"] if placement else []
    return Advice(
        strategy=chosen, chosen_by=chosen_by, advised=advice["strategy"],
        reasons=reasons + [f"strategy: {reason}" for reason in advice["reasons"]] + why,
        model=shape.name, params=shape.params, batch_size=batch_size,
        seq_len=shape.tokens_per_sample if shape.kind == "causal-lm" else None,
        device="cuda" if on_gpu else "cpu", nodes=allocation.nodes, processes_per_node=per_node,
        gpus=chosen_gpus if on_gpu else [], cuda_visible_devices=read_job_env(env).visible_devices(chosen_gpus) if on_gpu else None,
        assigned_gpus=[] if on_gpu else chosen_gpus, placement=placement, strategies=_rows(advice, on_gpu),
        accelerate_config=configs[0], deepspeed_config=configs[1],
        slurm_job_id=allocation.slurm.job_id if allocation.slurm else None,
        topology=allocation.topo.model_dump(mode="json") if allocation.topo is not None else None,
    )


MAX_PARAMS = 10**15  # parameters of one model: past any trained (GPT-4 class models are ~10^12)
_WHOLE, _TEXT, _PATH = "a whole number", "text", "a path (text)"
_EXPECTED = {"model": _PATH, "batch_size": _WHOLE, "seq_len": _WHOLE, "gpus": _WHOLE, "strategy": _TEXT,
             "topology_file": _PATH, "db": _TEXT, "accounting": _TEXT, "gpu_mem_gb": "a number of GB",
             "cpu": "True or False", "env": "a mapping of names to text (like os.environ)",
             "params": "a whole number of parameters (7e9 or 7_000_000_000)"}


def check_arguments(**given: Any) -> int | None:
    """Every argument of advise_job of its type, before anything reads it: a Python caller
    (`wirewise.advice(batch_size="4")`) gets one line naming the argument, as the CLI does for
    an option, never a TypeError from inside. Returns params as an int (7e9 is a float)."""
    import math

    for name, value in given.items():
        if value is None and name not in ("batch_size", "accounting", "cpu"):
            continue
        expected = _EXPECTED[name]
        if expected == _WHOLE or name == "params":
            ok = isinstance(value, int) and not isinstance(value, bool)
            if name == "params" and isinstance(value, float):
                ok = math.isfinite(value) and value.is_integer()
        elif expected in (_TEXT, _PATH):
            ok = isinstance(value, str) or (expected == _PATH and isinstance(value, os.PathLike))
        elif name == "gpu_mem_gb":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
        elif name == "cpu":
            ok = isinstance(value, bool)
        else:  # env
            ok = isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
        if not ok:
            raise UserError(f"{name}={_shown(value)}: give {expected}")
    params = given.get("params")
    if params is not None and params >= MAX_PARAMS:  # too few: params_shape says so
        raise UserError(f"params={_shown(params)}: give the model's parameter count, below {MAX_PARAMS:.0e}")
    return None if params is None else int(params)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _shape(model: str | None, params: int | None, seq_len: int | None):
    from wirewise.orchestrator.advise.params import model_shape, params_shape

    if (model is None) == (params is None):
        raise UserError("give the model: --model NAME (a registry name or a config.json) or --params N")
    return model_shape(model, seq_len) if model is not None else params_shape(params, seq_len)


def _named_strategy(strategy: str | None, env: Mapping[str, str], option: str) -> tuple[str, str] | None:
    """(the strategy named, who named it), or None for the advice. Not given at all (None), the
    strategy the job was given (WIREWISE_STRATEGY) is the one named; "auto" asks afresh."""
    who = option
    if strategy is None and STRATEGY.get(env):
        strategy, who = STRATEGY.get(env), f"{STRATEGY.name} (the strategy this job was given)"
    if strategy in (None, AUTO):
        return None
    if strategy not in registry.STRATEGIES:
        raise UserError(f"{who} {strategy!r}: not a strategy (use auto or one of {', '.join(registry.STRATEGIES)})")
    return strategy, who


def _placement(allocation: Allocation, gpus: int | None, history, why_cpu: str) -> tuple[dict | None, int, list[str]]:
    """(`wirewise place` for the set, ranks per node, reasons). Inside running ranks the set is
    the one they run on; otherwise the best `gpus` of the job's candidates. `why_cpu`: what
    the reasons say when CPU ranks stand in for the GPUs placed."""
    from wirewise.orchestrator.placement.place import place

    wanted = allocation.ranks_per_node or gpus
    if allocation.topo is None or not allocation.candidates:
        what = "no GPU here" if allocation.topo is None else "no GPU free here"
        return None, wanted or 1, [f"{what}: {wanted or 1} CPU rank(s) per node (gloo)"]
    candidates = allocation.candidates
    wanted = wanted or len(candidates)
    if wanted > len(candidates):
        raise UserError(f"--gpus {wanted}: this job has {len(candidates)} GPU(s) here "
                        f"({','.join(map(str, candidates))}: {allocation.candidates_source})")
    policy = "packed" if wanted < len(candidates) else "all"
    placement = {**place(allocation.topo, wanted, policy, candidates, history, allocation.candidates_source),
                 "policy": policy}
    reasons = list(placement["reasons"])
    if not allocation.live:
        reasons.append(f"{why_cpu}: {wanted} CPU rank(s) (gloo) stand in for GPUs "
                       f"{placement['cuda_visible_devices']}")
    return placement, wanted, reasons


def _advice(allocation, placement, shape, ranks, store, history, batch_size, seq_len, accounting, gpu_mem_gb) -> dict:
    """The advisor's answer for these ranks: on the chosen set's wiring (also where CPU ranks
    stand in for it: the advice is then what those GPUs would run); with the slowest wire
    unknown across nodes; without a wiring where there is none."""
    from wirewise.orchestrator.advise import advise_placement

    several_nodes = len(allocation.nodes) > 1
    topo = allocation.topo if placement is not None else None
    gpus = placement["gpus"] if placement is not None else list(range(ranks))
    busbw = placement["predicted_busbw_gbs"] if placement is not None and not several_nodes else None
    advice = advise_placement(topo, gpus, busbw, shape, store, batch_size, seq_len, accounting, gpu_mem_gb, ranks=ranks,
                              history=history)
    if several_nodes:
        advice["reasons"] = [f"{len(allocation.nodes)} nodes: the network between them is not modelled "
                             "(its busbw counts as unknown)", *advice["reasons"]]
    return advice


def _choose(advised: str | None, named: tuple[str, str] | None, on_gpu: bool) -> tuple[str | None, str, list[str]]:
    """(what runs, who chose it, what that adds to the reasons)."""
    from wirewise.configs import cpu_refusal

    if named is not None:
        strategy, who = named
        refusal = None if on_gpu else cpu_refusal(registry.STRATEGIES[strategy])
        if refusal:
            raise UserError(f"{who} {strategy}: {refusal}; on CPU ranks only ddp runs as itself through accelerate")
        said = [] if strategy == advised else [f"{strategy} as {who} says (the advice: {advised or 'nothing fits'})"]
        return strategy, who, said
    if advised is None:
        return None, "advice", []
    refusal = None if on_gpu else cpu_refusal(registry.STRATEGIES[advised])
    if refusal:
        return "ddp", "advice", [f"ddp instead of {advised}: {refusal}"]
    return advised, "advice", []


def _runs_here(spec, on_gpu: bool) -> bool:
    """Through accelerate launch, on this job's device (wirewise.configs.cpu_refusal)."""
    from wirewise.configs import cpu_refusal

    return spec.accelerate is not None and (on_gpu or cpu_refusal(spec) is None)


def _rows(advice: dict, on_gpu: bool) -> list[StrategyAdvice]:
    rows = []
    for row in advice["strategies"]:
        calibration = row.get("calibration")
        rows.append(StrategyAdvice(
            strategy=row["strategy"], fits=row["fits"], memory_gb=row["total_gb"],
            memory_basis="measured" if calibration else "model",
            memory_sources=list(calibration.get("sources", [])) if calibration else [],
            tokens_per_s=row["predicted_tokens_per_s"], tokens_basis=row["basis"], results=row["results"],
            sources=list(row.get("sources", [])),
            runs_here=_runs_here(registry.STRATEGIES[row["strategy"]], on_gpu),
        ))
    return rows


def _configs(strategy: str | None, model: str | None, processes: int, machines: int, on_gpu: bool):
    """(the accelerate launcher config, the DeepSpeed config) of the strategy that runs."""
    from wirewise.configs import deepspeed_launch_config, launcher_config
    from wirewise.models import MODELS

    if strategy is None:
        return None, None
    spec = registry.STRATEGIES[strategy]
    if spec.accelerate is None:
        raise UserError(f"strategy {strategy} has no accelerate configuration (its descriptor names none)")
    entry = MODELS.get(model) if model else None
    launcher = launcher_config(
        spec, processes, "bf16" if on_gpu else "no", machines=machines, cpu=not on_gpu,
        layer_classes=list(entry.layer_classes) if entry else None, deepspeed_file=DEEPSPEED_FILE,
    )
    return launcher, deepspeed_launch_config(spec, bf16=on_gpu) if spec.on_deepspeed else None

