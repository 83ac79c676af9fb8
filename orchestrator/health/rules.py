"""The rules file: what counts as a defect, and how far wirewise may act on one.

The defaults ship beside this module (rules.yaml, documented line by line; docs/fleet.md has
the figures behind them). A user's file (`--rules FILE`) has the same shape and is laid over
the defaults: what it sets replaces, what it leaves out keeps its default. It is read with
yaml.safe_load and validated with unknown keys refused; a problem is one line that names the
file and the field path (`rules.busbw-below-baseline.max_drop: ...`), exit 2.

Validated completely when read, so that nothing a file sets fails a later step (the prolog, the
watchdog, a repeat's campaign) on a node, where a failure would drain it: every value of its
type (strict: `repeats: yes` is not 1, `min_bytes: 1.5` is not one byte), every number finite
and within its bound, and what must hold between fields (the prolog's sizes in order, its
collective what CollectiveParams builds, its work within its time limit).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from wirewise.errors import UserError, first_problem
from wirewise.limits import MAX_INT, MAX_NODES, MAX_REPEATS
from wirewise.units import bytes_text, parse_size

DEFAULTS = Path(__file__).with_name("rules.yaml")
UNKNOWN_KEY = "unknown key (check its spelling; docs/fleet.md lists the keys)"
# strict: a YAML `yes` is no count and a quoted "3" no number; finite: `.inf` and `.nan` are no bound
Strict = ConfigDict(extra="forbid", populate_by_name=True, strict=True, allow_inf_nan=False)
MAX_SIGMAS = 100.0  # spreads below a reference: past a few dozen a rule can never fire
# The prolog holds every job of the node while it runs. Bounds far past the defaults (10
# iterations, 3 warm-up, 64M-256M, 30 s) that keep it a check: 1 GiB buffers fit any data-centre
# GPU the job has not touched yet; slurmd's PrologEpilogTimeout is often a few minutes.
PROLOG_MAX_ITERS = 1000
PROLOG_MAX_BYTES = 1024**3
PROLOG_TIME_S = (5.0, 300.0)  # at least: starting the ranks, judging, storing and draining take seconds
# The prolog's collective must fit half its time limit at 1 GB/s of busbw, a floor under any
# GPU link (PCIe Gen3 x4 carries ~3.9 GB/s) and under gloo ranks on one host's loopback: past
# its limit the collective ends "timeout", which the prolog judges a fault of the node.
PROLOG_FLOOR_BYTES_S = 1e9


def _size(value: Any) -> int:
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"{value!r}: a whole number of bytes (or 64K, 1M, 1G)")
    try:
        return parse_size(int(value) if isinstance(value, float) else value)
    except ValueError as exc:
        raise ValueError(f"{value!r}: {exc}") from None


class Rule(BaseModel):
    model_config = Strict
    enabled: bool = True


class DropRule(Rule):
    """A measured figure below its reference by more than max_drop and `sigmas` spreads."""

    max_drop: float = Field(gt=0, lt=1)
    sigmas: float = Field(ge=0, le=MAX_SIGMAS)


class SizedDropRule(DropRule):
    min_bytes: int = Field(ge=1, le=MAX_INT)
    min_share: float = Field(gt=0, le=1)

    _bytes = field_validator("min_bytes", mode="before")(lambda cls, v: _size(v))


class PeersRule(SizedDropRule):
    min_peers: int = Field(ge=1, le=MAX_NODES)


class TaskRule(Rule):
    min_peers: int = Field(ge=1, le=MAX_NODES)


class PairRule(Rule):
    tolerance: float = Field(gt=0, lt=1)


class RuleSet(BaseModel):
    model_config = Strict
    busbw_below_baseline: SizedDropRule = Field(alias="busbw-below-baseline")
    tokens_below_baseline: DropRule = Field(alias="tokens-below-baseline")
    slower_than_peers: PeersRule = Field(alias="slower-than-peers")
    nvlink_inactive: Rule = Field(alias="nvlink-inactive")
    pcie_degraded: Rule = Field(alias="pcie-degraded")
    fabric_degraded: Rule = Field(alias="fabric-degraded")
    wiring_changed: Rule = Field(alias="wiring-changed")
    task_failed: TaskRule = Field(alias="task-failed")
    transport_off_nvlink: Rule = Field(alias="transport-off-nvlink")
    pair_below_fleet: PairRule = Field(alias="pair-below-fleet")

    def enabled(self, name: str) -> bool:
        return getattr(self, name.replace("-", "_")).enabled


class Guardrails(BaseModel):
    model_config = Strict
    max_share: float = Field(gt=0, le=1)
    max_per_hour: int = Field(ge=1, le=MAX_NODES)


class HealthCheck(BaseModel):
    model_config = Strict
    time_limit_s: float = Field(gt=0, le=55)  # slurmd kills the program at 60 s


class Prolog(BaseModel):
    model_config = Strict
    op: str
    min_bytes: int = Field(ge=1, le=PROLOG_MAX_BYTES)
    max_bytes: int = Field(ge=1, le=PROLOG_MAX_BYTES)
    iters: int = Field(ge=1, le=PROLOG_MAX_ITERS)
    warmup: int = Field(ge=0, le=PROLOG_MAX_ITERS)
    time_limit_s: float = Field(ge=PROLOG_TIME_S[0], le=PROLOG_TIME_S[1])
    backend: Literal["nccl", "gloo"] | None = None  # default: nccl on GPUs, gloo on CPU ranks

    _bytes = field_validator("min_bytes", "max_bytes", mode="before")(lambda cls, v: _size(v))

    @field_validator("op")
    @classmethod
    def _known_op(cls, value: str) -> str:
        from wirewise.registry import OPS

        if value not in OPS:
            raise ValueError(f"{value!r} is not one of {', '.join(OPS)}")
        return value

    @model_validator(mode="after")
    def _runs(self) -> Prolog:
        """What the prolog will build, built now: sizes in order, the collective as
        CollectiveParams takes it, its traffic within half the time limit."""
        if self.min_bytes > self.max_bytes:
            raise ValueError(f"min_bytes {bytes_text(self.min_bytes)} is above max_bytes {bytes_text(self.max_bytes)}")
        params = self.params()
        traffic = 2 * sum(params.sizes) * (self.iters + self.warmup)  # an all-reduce moves each buffer about twice
        if traffic / PROLOG_FLOOR_BYTES_S > self.time_limit_s / 2:
            raise ValueError(f"{self.iters + self.warmup} iterations of {bytes_text(self.min_bytes)}-{bytes_text(self.max_bytes)} "
                             f"move {traffic / 1e9:.3g} GB: more than half of time_limit_s {self.time_limit_s:g} s at 1 GB/s "
                             "(fewer iterations or smaller sizes, or a longer time limit)")
        return self

    def params(self):
        """The prolog's collective (CollectiveParams), checked."""
        from wirewise.workloads.collective import CollectiveParams

        try:
            return CollectiveParams(ops=[self.op], min_bytes=self.min_bytes, max_bytes=self.max_bytes, iters=self.iters,
                                    warmup=self.warmup, check=True)
        except ValidationError as exc:
            raise ValueError(first_problem(exc)) from None


class Rules(BaseModel):
    model_config = Strict
    include_cpu: bool
    repeats: int = Field(ge=1, le=MAX_REPEATS)
    min_results: int = Field(ge=1, le=MAX_INT)
    rules: RuleSet
    guardrails: Guardrails
    health_check: HealthCheck
    prolog: Prolog
    source: str = Field("defaults", exclude=True)  # where they were read from, for messages

    @property
    def file(self) -> str | None:
        """The site's rules file these were read from; None for the shipped rules alone."""
        return None if self.source == str(DEFAULTS) else self.source


@cache
def _default_doc() -> dict[str, Any]:
    import yaml

    return yaml.safe_load(DEFAULTS.read_text())


def default_rules() -> Rules:
    return _validated(_default_doc(), str(DEFAULTS))


def load_rules(path: str | Path | None) -> Rules:
    """The defaults, with the file's values laid over them (None: the file of the setting rules,
    wirewise.settings, else the defaults alone)."""
    if path is None:
        from wirewise.settings import setting

        path = setting("rules").value
    if path is None:
        return default_rules()
    from wirewise.yamlfile import read_yaml

    doc = read_yaml(path, "rules file")
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise UserError(f"{path}: a rules file is a mapping (rules, guardrails, ...; see docs/fleet.md)")
    return _validated(_laid_over(_default_doc(), doc), str(path))


def _laid_over(defaults: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """`given` over `defaults`, mapping by mapping (a value that is no mapping replaces)."""
    merged = dict(defaults)
    for key, value in given.items():
        if isinstance(value, dict) and isinstance(defaults.get(key), dict):
            merged[key] = _laid_over(defaults[key], value)
        else:
            merged[key] = value
    return merged


def _validated(doc: dict[str, Any], source: str) -> Rules:
    try:
        return Rules.model_validate({**doc, "source": source})
    except ValidationError as exc:
        where = "" if exc.errors()[0]["loc"] else "rules"
        raise UserError(f"{source}: {first_problem(exc, where, unknown=UNKNOWN_KEY)}") from None
