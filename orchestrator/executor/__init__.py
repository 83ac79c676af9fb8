"""Where a submission's elements run: one protocol (core.py), one small module per executor,
one line per executor here. Adding one (Flux, Kubernetes) is a module with a class that
implements wirewise.orchestrator.executor.core.Executor, and its line below; campaigns
(`target.executor`, `campaign submit --executor`) and `wirewise run` reach it by name.

    executor_named(SLURM) -> Executor     an unknown name is one line that names the known ones

Code elsewhere names an executor by LOCAL or SLURM, never by its text (tests/test_architecture.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from wirewise.errors import UserError

if TYPE_CHECKING:  # campaign commands import this to check a name: keep it light
    from wirewise.orchestrator.executor.core import Executor

LOCAL = "local"  # this machine, one task after another
SLURM = "slurm"  # a Slurm cluster, through submitit
EXECUTORS = {  # name -> "module:class"
    LOCAL: "wirewise.orchestrator.executor.local:LocalExecutor",
    SLURM: "wirewise.orchestrator.executor.slurm:SlurmExecutor",
}


def check_name(name: str, option: str = "executor") -> str:
    if name not in EXECUTORS:
        raise UserError(f"{option} {name!r}: choose one of {', '.join(sorted(EXECUTORS))}")
    return name


def executor_named(name: str, option: str = "executor") -> Executor:
    module, _, cls = EXECUTORS[check_name(name, option)].partition(":")
    return getattr(importlib.import_module(module), cls)()
