"""The yardstick of tests/gpu/train_check.sh: tests/benchmarks/plain_loop.py builds its model
straight from transformers, with no wirewise code, yet must train the same model that
`bench train --model mistral-1b` builds, or its tokens/s would compare different work.
Built on the meta device: shapes and counts only (the loop itself needs a GPU)."""

from __future__ import annotations

import subprocess
import sys

import torch

from tests.benchmarks import plain_loop
from tests.conftest import ROOT

# Hand count for hidden 2048, 16 layers, 16 heads of 128, 8 KV heads, MLP 7168, vocab 32000:
# per layer q,o 2048^2 each + k,v 2048x1024 each + MLP 3 x 2048 x 7168 + 2 norms of 2048
# = 56,627,200; x16 + embeddings and head 2 x 32000 x 2048 + the final norm 2048.
MISTRAL_1B_PARAMS = 16 * 56_627_200 + 2 * 32000 * 2048 + 2048


def test_the_plain_loop_builds_without_wirewise_the_model_wirewise_trains():
    from wirewise.jobs.train.models import build_model

    meta = torch.device("meta")
    plain = plain_loop.build("mistral-1b", torch.float32, meta)
    ours = build_model("mistral-1b", meta, torch.float32).model
    assert sum(p.numel() for p in plain.parameters()) == MISTRAL_1B_PARAMS == 1_037_109_248
    assert {n: p.shape for n, p in plain.named_parameters()} == {n: p.shape for n, p in ours.named_parameters()}
    assert plain.config._attn_implementation == ours.config._attn_implementation == "sdpa"


def test_the_plain_loop_imports_nothing_of_wirewise():
    code = ("import sys, torch; sys.path.insert(0, 'tests/benchmarks'); import plain_loop; "
            "plain_loop.build('mistral-1b', torch.float32, torch.device('meta')); "
            "print(sorted(m for m in sys.modules if m.startswith('wirewise')))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr
