"""What one training benchmark asks for. Validated by the CLI and again on every rank.

Pure pydantic, no torch: the control plane builds these. Field names that are also
ResultRecord fields (model, strategy, micro_batch, seq_len) are copied into the record
of a failed run by wirewise.jobs.supervise, so a failure still says what was asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from wirewise import registry
from wirewise.errors import UserError
from wirewise.limits import MAX_ITERATIONS
from wirewise.workloads import TRANSPORT_ENV, Ranks, Transport, make_task
from wirewise.models import MODELS, check_data_kind, check_data_source, check_model_name, max_positions
from wirewise.strategy import PRECISIONS

# auto: bf16-mixed on GPU, fp32 on CPU. bf16-mixed: bf16 compute over fp32 weights (DDP: autocast;
# FSDP: MixedPrecisionPolicy; DeepSpeed: its bf16 mode, bf16 weights with an fp32 master copy).
# bf16: bf16 weights and optimizer state (DDP/FSDP); DeepSpeed treats it as bf16-mixed.
Precision = Literal[("auto", *PRECISIONS)]


class TrainParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str  # a registry name (wirewise.models.MODELS) or a local config file / model folder
    strategy: registry.StrategyName
    engine: registry.EngineName = "native"
    micro_batch: int = Field(8, ge=1)  # samples per rank per step
    seq_len: int | None = Field(None, ge=2)  # language models; None: the model's default
    steps: int = Field(10, ge=1, le=MAX_ITERATIONS)  # timed steady-state steps
    warmup_steps: int = Field(2, ge=1, le=MAX_ITERATIONS)  # untimed; the last one also does the state accounting
    precision: Precision = "auto"
    compile: bool = False  # torch.compile the model (per layer under FSDP); fused AdamW on GPU
    lr: float = Field(1e-4, gt=0)
    seed: int = 0
    data: str | None = None  # Food-101 image folder, or Alpaca JSON/JSONL; None: synthetic batches
    memory_limit_gb: float | None = Field(None, gt=0)  # cap per GPU (set_per_process_memory_fraction)

    # Test hook, not a user option: raise MemoryError on every rank at this step (0 = the first
    # step), to exercise the real catch-and-record path on a machine without a GPU to exhaust.
    inject_memory_error_at_step: int | None = Field(None, ge=0)

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        check_model_name(value)
        return value

    @field_validator("data")
    @classmethod
    def _data_exists(cls, value: str | None) -> str | None:
        if value is not None and not Path(value).exists():
            raise ValueError("no such file or folder")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> TrainParams:
        entry = MODELS.get(self.model)
        if self.seq_len is None and entry is not None and entry.kind == "causal-lm":
            self.seq_len = entry.default_seq_len  # explicit, so even a failed run's record says it
        longest = max_positions(self.model)
        if self.seq_len is not None and longest is not None and self.seq_len > longest:
            raise ValueError(f"--seq-len {self.seq_len}: {self.model} takes at most {longest} positions (max_position_embeddings)")
        if self.engine == "accelerate" and self.compile:
            raise ValueError("--compile is only wired for --engine native")
        if self.engine == "accelerate" and registry.STRATEGIES[self.strategy].accelerate is None:
            raise ValueError(f"--strategy {self.strategy} has no accelerate config; use --engine native")
        if self.model in MODELS:  # a local config's kind is known only once transformers reads it
            check_data_kind(self.data, MODELS[self.model].kind)
        if self.data is not None:
            check_data_source(self.data)
        return self

    @property
    def total_steps(self) -> int:
        return self.warmup_steps + self.steps

    def to_task(self, ranks: Ranks, transport: Transport = "default", **task: Any):
        """The task for this run on `ranks` over `transport`; UserError for options that need a GPU
        on CPU ranks. Every rank runs offline: models are built from configs, nothing is downloaded."""
        if ranks.on_cpu and self.engine == "accelerate":
            raise UserError("--engine accelerate runs on GPUs only: on CPU accelerate's FSDP plugin does not shard and "
                            "its DeepSpeed plugin miscounts processes; use --engine native")
        if ranks.on_cpu and self.memory_limit_gb is not None:
            raise UserError("--memory-limit-gb caps GPU memory, and this run has no GPU")
        return make_task("train", self.model_dump(exclude_none=True), ranks, {**RANK_ENV, **TRANSPORT_ENV[transport]}, **task)


RANK_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
