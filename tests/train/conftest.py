"""Helpers for the training tests: real rank processes on the CPU (2 ranks, gloo).

DeepSpeed JIT-compiles its C++ ops into TORCH_EXTENSIONS_DIR. The training path builds none
on CPU (wirewise.jobs.train.strategies.zero skips the inference-only shared-memory all-reduce that
DeepSpeed would otherwise compile at start), but should one be built, every test and rank
shares one cache folder, so only the first run of a machine pays.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import wirewise

EXTENSIONS_DIR = Path(os.environ.get("TORCH_EXTENSIONS_DIR") or Path.home() / ".cache" / "wirewise" / "torch_extensions")
# A few steps of a tiny model, as fast as two cores allow; lr high enough that the loss visibly falls.
QUICK = ("--nproc", "2", "--batch-size", "4", "--seq-len", "32", "--steps", "2", "--warmup-steps", "1", "--lr", "1e-3")


def train_environment(folder: Path) -> dict[str, str]:
    """Run folders under `folder`, the shared extension cache, and offline Hugging Face."""
    return {
        "WIREWISE_RUNS": str(folder / "runs"),
        "TORCH_EXTENSIONS_DIR": str(EXTENSIONS_DIR),
        "HF_HUB_OFFLINE": "1",
    }


@pytest.fixture
def train_env(tmp_path: Path) -> dict[str, str]:
    return train_environment(tmp_path)


def bench_train(*args: str, env: dict[str, str], db: str, timeout: float = 600):
    """`wirewise bench train ARGS --json`: (exit code, the printed record or None, stderr)."""
    proc = wirewise("bench", "train", *args, "--db", db, "--json", env=env, timeout=timeout)
    record = json.loads(proc.stdout) if proc.stdout.strip() else None
    return proc.returncode, record, proc.stderr
