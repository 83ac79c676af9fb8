"""What one collective sweep asks for. Validated by the CLI and again on every rank.

Pure pydantic, no torch: the control plane builds these. The options mirror nccl-tests
(-b/-e/-f, -n iters, -w warmup, -c check, -d dtype) so a sweep here and an nccl-tests run
on the same GPUs measure the same sizes with the same definitions.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from wirewise.dtypes import ELEMENT_BYTES
from wirewise.limits import MAX_ITERATIONS
from wirewise.registry import DEFAULT_OPS, OPS, OpName
from wirewise.units import bytes_text, parse_size
from wirewise.workloads import TRANSPORT_ENV, Ranks, Transport, UserError, make_task

OP_NAMES = tuple(OPS)  # every op, in the order a sweep runs them

# The element types a sweep measures (torch's names; their sizes: wirewise.dtypes), and other spellings of them.
Dtype = Literal["float32", "bfloat16", "float16"]
SWEEP_DTYPES = get_args(Dtype)
DTYPE_ALIASES = {"float": "float32", "fp32": "float32", "bf16": "bfloat16", "half": "float16", "fp16": "float16"}

def transport_note(transport: str, backend: str, world_size: int, nvls_enable: str | None) -> str | None:
    """What --transport pcie does not turn off, where it matters: NVLS on 3+ NCCL ranks
    (`nvls_enable` is NCCL_NVLS_ENABLE as the ranks will see it, None when unset)."""
    if transport != "pcie" or backend != "nccl" or world_size <= 2 or nvls_enable == "0":
        return None
    return (
        "--transport pcie disables NVLink peer-to-peer only; on an NVSwitch node NCCL may still reduce "
        f"through NVLink SHARP (NCCL_NVLS_ENABLE={nvls_enable or 'unset'}). "
        "Set NCCL_NVLS_ENABLE=0 yourself for an all-PCIe all_reduce."
    )

def canonical_dtype(name: str) -> str:
    """'bf16' -> 'bfloat16', 'float' -> 'float32'; unknown names raise with the choices."""
    key = str(name).strip().lower()
    key = DTYPE_ALIASES.get(key, key)
    if key not in SWEEP_DTYPES:
        raise ValueError(f"choose one of {', '.join(SWEEP_DTYPES)} (or {', '.join(DTYPE_ALIASES)})")
    return key


def sweep_sizes(min_bytes: int, max_bytes: int, factor: int) -> list[int]:
    """nccl-tests' size column before per-op rounding: min, min*f, ... while <= max."""
    sizes, size = [], min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= factor
    return sizes


class CollectiveParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ops: list[OpName] = Field(default_factory=lambda: list(DEFAULT_OPS), min_length=1)
    min_bytes: int = 1024**2  # -b
    max_bytes: int = 1024**3  # -e
    step_factor: int = Field(2, ge=2)  # -f
    iters: int = Field(20, ge=1, le=MAX_ITERATIONS)  # -n: timed iterations per size
    warmup: int = Field(5, ge=0, le=MAX_ITERATIONS)  # -w: untimed iterations per size
    dtype: Dtype = "float32"  # nccl-tests' default type is float
    check: bool = False  # -c: verify every size and count wrong elements
    transport: Transport = "default"  # recorded; the environment it implies is TRANSPORT_ENV[transport]
    # nccl-tests' -G: the timed calls of each size captured once into a CUDA graph and replayed,
    # so the host's launch cost leaves the figure. Off by default: eager calls are what a
    # PyTorch job pays. NCCL only (to_task refuses it elsewhere).
    cuda_graph: bool = False

    # Test hook, not a user option: this rank adds 1 to the first element of its input before
    # the checked call, so the real check must find the corruption in what the collective returns.
    corrupt_rank: int | None = Field(None, ge=0)
    # Test hook, not a user option: this rank asks its allocator for a petabyte before the sweep,
    # the allocation failure a rank on a node short of memory meets, down the same `oom` path.
    oom_rank: int | None = Field(None, ge=0)

    @field_validator("min_bytes", "max_bytes", mode="before")
    @classmethod
    def _size(cls, value):
        return parse_size(value)

    @field_validator("dtype", mode="before")
    @classmethod
    def _dtype(cls, value):
        return canonical_dtype(value)

    @field_validator("ops", mode="before")
    @classmethod
    def _ops(cls, value):
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        return list(dict.fromkeys(value))  # keep order, drop repeats; OpName checks each

    @model_validator(mode="after")
    def _range(self) -> CollectiveParams:
        if self.min_bytes > self.max_bytes:
            raise ValueError(f"-b {bytes_text(self.min_bytes)} is larger than -e {bytes_text(self.max_bytes)}")
        return self

    @property
    def element_bytes(self) -> int:
        return ELEMENT_BYTES[self.dtype]

    @property
    def sizes(self) -> list[int]:
        return sweep_sizes(self.min_bytes, self.max_bytes, self.step_factor)

    def to_task(self, ranks: Ranks, **task: Any):
        """The task for this sweep on `ranks`: the transport's environment in every rank; the
        test hooks (corrupt_rank, oom_rank) are passed on only when set. A CUDA graph needs NCCL ranks."""
        if self.cuda_graph and ranks.backend != "nccl":
            raise UserError(
                f"--cuda-graph needs the nccl backend (a CUDA graph captures GPU work); this run uses {ranks.backend}"
            )
        hooks = {"corrupt_rank", "oom_rank"}
        params = self.model_dump(mode="json", exclude={h for h in hooks if getattr(self, h) is None})
        return make_task("collective", params, ranks, dict(TRANSPORT_ENV[self.transport]), **task)


def sweep_average(busbw_gbs: list[float]) -> float:
    """nccl-tests' closing 'Avg bus bandwidth' of an op: the mean busbw over its sizes and forms."""
    return sum(busbw_gbs) / len(busbw_gbs)
