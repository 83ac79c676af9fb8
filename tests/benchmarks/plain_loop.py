"""A minimal plain-PyTorch training loop: the yardstick for `wirewise bench train`.

No wrapper, no framework, nothing of wirewise: the model is built straight from transformers
(MistralConfig + MistralForCausalLM, random weights, sdpa) with the shapes written out below,
synthetic token ids, `model(input_ids, labels).loss`, backward, fused torch AdamW. Under
torchrun (WORLD_SIZE > 1) it is plain DDP over NCCL, one GPU per rank, the same ranks
`bench train --strategy ddp` would use. The precision regimes match wirewise's: `bf16-mixed`
is bf16 autocast over fp32 weights, `bf16` is bf16 weights. Each step is timed between device
syncs after the warmup steps; tokens/s counts every rank's tokens; MFU uses 6 x params x
tokens against the GPU's datasheet dense bf16 peak (DATASHEET_BF16_TFLOPS; `mfu`, the basis of
wirewise's records), and against WIREWISE_PEAK_TFLOPS too when set (`mfu_measured_peak`).

    python3 tests/benchmarks/plain_loop.py --model mistral-1b --batch-size 8 --seq-len 2048 --precision bf16
    torchrun --nproc-per-node 2 tests/benchmarks/plain_loop.py --model mistral-1b ...   (DDP)
    python3 tests/benchmarks/plain_loop.py --measure-peak   # bf16 8192^3 matmul TFLOP/s only

Rank 0 prints one JSON object. GPU only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch

# mistralai/Mistral-7B-v0.1's config.json, and the 1.04B model of the same family the MFU
# comparison uses (hidden 2048, 16 layers, 16 heads, 8 KV heads, MLP 7168).
MISTRAL_7B = dict(
    vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
    num_key_value_heads=8, max_position_embeddings=32768, sliding_window=4096, rms_norm_eps=1e-5, tie_word_embeddings=False,
)
SHAPES = {
    "mistral-7b": MISTRAL_7B,
    "mistral-1b": {**MISTRAL_7B, "hidden_size": 2048, "intermediate_size": 7168, "num_hidden_layers": 16,
                   "num_attention_heads": 16, "num_key_value_heads": 8},
}
# Dense bf16 tensor-core TFLOP/s, NVIDIA's datasheets (H100 and H200 SXM share the figure).
DATASHEET_BF16_TFLOPS = {"H200": 989.4, "H100": 989.4, "A100": 312.0}


def build(name: str, dtype: torch.dtype, device: torch.device) -> torch.nn.Module:
    from transformers import MistralConfig, MistralForCausalLM

    config = MistralConfig(**SHAPES[name], attn_implementation="sdpa")
    with torch.device(device):
        model = MistralForCausalLM(config).to(dtype)
    return model.train()


def datasheet_peak(device_name: str) -> float | None:
    return next((tflops for gpu, tflops in DATASHEET_BF16_TFLOPS.items() if gpu in device_name), None)


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
    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(device)
    torch.manual_seed(0)
    model = build(args.model, torch.bfloat16 if args.precision == "bf16" else torch.float32, device)
    n_params = sum(p.numel() for p in model.parameters())
    if args.compile:
        model.compile()
    if world > 1:
        torch.distributed.init_process_group("nccl", device_id=device)
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.0, fused=True)
    ids = torch.randint(0, SHAPES[args.model]["vocab_size"], (args.batch_size, args.seq_len), device=device)
    times, losses = _steps(model, optimizer, ids, args)
    step_time = statistics.fmean(times)
    tokens = args.batch_size * args.seq_len * world
    flops_per_gpu = 6 * n_params * tokens / step_time / world
    datasheet = datasheet_peak(torch.cuda.get_device_name())
    peak_env = os.environ.get("WIREWISE_PEAK_TFLOPS")
    result = {
        "loop": "plain", "model": args.model, "precision": args.precision, "compile": args.compile, "ranks": world,
        "batch_size": args.batch_size, "seq_len": args.seq_len, "n_params": n_params, "step_time_s": step_time,
        "tokens_per_s": tokens / step_time,
        "mfu": flops_per_gpu / (datasheet * 1e12) if datasheet else None,  # the datasheet's, as wirewise's records
        "mfu_measured_peak": flops_per_gpu / (float(peak_env) * 1e12) if peak_env else None,
        "peak_mem_bytes": torch.cuda.max_memory_allocated(device),
        "losses": [float(x) for x in losses], "device": torch.cuda.get_device_name(), "torch": torch.__version__,
    }
    if world > 1:
        torch.distributed.barrier()
        del model
        torch.distributed.destroy_process_group()
    return result if rank == 0 else {}


def _steps(model, optimizer, ids, args) -> tuple[list[float], list]:
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
    return times, losses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="mistral-1b", choices=list(SHAPES))
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
    result = train(args)
    if result:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
