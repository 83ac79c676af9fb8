"""A minimal plain-PyTorch training loop: the yardstick for `wirewise bench train` on one GPU.

No wrapper, no framework: the registry's model built as wirewise builds it
(wirewise.jobs.train.models.build_model: transformers, random weights, sdpa), synthetic token ids, `model(input_ids, labels).loss`, backward, fused torch AdamW.
The precision regimes match wirewise's: `bf16-mixed` is bf16 autocast over fp32 weights,
`bf16` is bf16 weights. Each step is timed between device syncs after the warmup steps, the
same way the wirewise loop times it, and MFU uses the same 6 x params x tokens formula.

    python3 tests/benchmarks/plain_loop.py --model mistral-1b --batch-size 8 --seq-len 2048 --precision bf16
    python3 tests/benchmarks/plain_loop.py --measure-peak   # bf16 8192^3 matmul TFLOP/s only

Prints one JSON object. GPU only. The peak for MFU is WIREWISE_PEAK_TFLOPS when set, else
the matmul peak measured here (8192^3 bf16, mean of 10 after 3 warm-ups).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout's jobs/ package

import torch  # noqa: E402

from wirewise.jobs.train.models import MODELS, build_model  # noqa: E402  (the same model wirewise builds)


def measure_matmul_tflops(size: int = 8192, warmup: int = 3, iters: int = 10) -> float:
    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    for _ in range(warmup):
        a @ b
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        a @ b
    torch.cuda.synchronize()
    return 2 * size**3 * iters / (time.perf_counter() - start) / 1e12


def train(args) -> dict:
    torch.manual_seed(0)
    built = build_model(args.model, torch.device("cuda"), torch.bfloat16 if args.precision == "bf16" else torch.float32)
    model, config, n_params = built.model, built.config, built.n_params
    if args.compile:
        model.compile()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.0, fused=True)
    ids = torch.randint(0, config.vocab_size, (args.batch_size, args.seq_len), device="cuda")
    autocast = args.precision == "bf16-mixed"
    times, losses = [], []
    for step in range(args.warmup_steps + args.steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.autocast("cuda", torch.bfloat16, enabled=autocast):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach())
        torch.cuda.synchronize()
        if step >= args.warmup_steps:
            times.append(time.perf_counter() - start)
    step_time = statistics.fmean(times)
    tokens = args.batch_size * args.seq_len
    peak_env = os.environ.get("WIREWISE_PEAK_TFLOPS")
    peak = float(peak_env) if peak_env else measure_matmul_tflops()
    return {
        "loop": "plain",
        "model": args.model,
        "precision": args.precision,
        "compile": args.compile,
        "batch_size": args.batch_size,
        "seq_len": args.seq_len,
        "n_params": n_params,
        "step_time_s": step_time,
        "tokens_per_s": tokens / step_time,
        "mfu": 6 * n_params * tokens / step_time / (peak * 1e12),
        "peak_tflops": peak,
        "peak_source": "WIREWISE_PEAK_TFLOPS" if peak_env else "measured 8192^3 bf16 matmul",
        "peak_mem_bytes": torch.cuda.max_memory_allocated(),
        "losses": [float(x) for x in losses],
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="mistral-1b", choices=[n for n, e in MODELS.items() if e.kind == "causal-lm"])
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--precision", choices=["bf16-mixed", "bf16"], default="bf16-mixed")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model (in place)")
    parser.add_argument("--measure-peak", action="store_true", help="print the bf16 matmul TFLOP/s and stop")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("plain_loop.py needs a CUDA GPU", file=sys.stderr)
        return 2
    if args.measure_peak:
        print(json.dumps({"matmul_bf16_tflops": measure_matmul_tflops(), "device": torch.cuda.get_device_name()}))
        return 0
    print(json.dumps(train(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
