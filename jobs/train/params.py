"""What one training benchmark asks for. Validated by the CLI and again on every rank.

Pure pydantic, no torch: the control plane builds these. Field names that are also
ResultRecord fields (model, strategy, micro_batch, seq_len) are copied into the record
of a failed run by jobs.launch, so a failure still says what was asked.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

STRATEGIES = ("ddp", "fsdp", "zero1", "zero2", "zero3")
ENGINES = ("native", "accelerate")
PRECISIONS = ("auto", "fp32", "bf16-mixed", "bf16")

Strategy = Literal["ddp", "fsdp", "zero1", "zero2", "zero3"]
Engine = Literal["native", "accelerate"]
# auto: bf16-mixed on GPU, fp32 on CPU. bf16-mixed: bf16 compute over fp32 weights (DDP: autocast;
# FSDP: MixedPrecisionPolicy; DeepSpeed: its bf16 mode, bf16 weights with an fp32 master copy).
# bf16: bf16 weights and optimizer state (DDP/FSDP); DeepSpeed treats it as bf16-mixed.
Precision = Literal["auto", "fp32", "bf16-mixed", "bf16"]


class TrainParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str  # a registry name (jobs.train.models.MODELS) or a local config file / model folder
    strategy: Strategy
    engine: Engine = "native"
    micro_batch: int = Field(8, ge=1)  # samples per rank per step
    seq_len: int | None = Field(None, ge=2)  # language models; None: the model's default
    steps: int = Field(10, ge=1)  # timed steady-state steps
    warmup_steps: int = Field(2, ge=1)  # untimed; the last one also does the state accounting
    precision: Precision = "auto"
    compile: bool = False  # torch.compile the model (per layer under FSDP); fused AdamW on GPU
    lr: float = Field(1e-4, gt=0)
    seed: int = 0
    data: str | None = None  # Food-101 image folder, or Alpaca JSON/JSONL; None: synthetic batches
    memory_limit_gb: float | None = Field(None, gt=0)  # cap per GPU (set_per_process_memory_fraction)

    # Test hook, not a user option: raise MemoryError on every rank at this step (0 = the first
    # step), to exercise the real catch-and-record path on a machine without a GPU to exhaust.
    inject_memory_error_at_step: int | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _compile_needs_native(self) -> TrainParams:
        if self.engine == "accelerate" and self.compile:
            raise ValueError("--compile is only wired for --engine native")
        return self

    @property
    def total_steps(self) -> int:
        return self.warmup_steps + self.steps
