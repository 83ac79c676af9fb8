"""Fine-tune a causal language model with the Hugging Face Trainer, started by `wirewise launch`:

    wirewise launch --model tiny-mistral --batch-size 4 --seq-len 64 -- docs/examples/finetune.py --steps 30

1. Before anything is built, it asks wirewise what to run on (`wirewise.advice`, torch-free):
   the strategy, the GPUs, the accelerate configuration and the predicted tokens/s and memory.
   Inside `wirewise launch` the advice describes the job the launcher started; anywhere else
   (a plain `accelerate launch`, one process) it is the advice for what this process was given.
2. It builds the model from its config, with random weights (nothing is downloaded): a
   registry model (`wirewise.models`) or any transformers config.json.
3. The task: continue arithmetic sequences of token ids (each next token the previous plus a
   step, modulo the vocabulary); a model learns it in a few dozen steps, so the falling loss
   shows the ranks train one model together.
4. The Trainer runs on the accelerate state `accelerate launch` set up from the configuration;
   WirewiseCallback records the job's steady-state tokens/s, step time and peak memory per rank
   as a result with source=job, stored in the database `wirewise launch` names.

`--report FILE` writes, from rank 0, what the job saw: the advice, what accelerate built, the
losses and the result file (the test suite checks them against the launch).
"""

from __future__ import annotations

import argparse
import gc
import json
import os

import wirewise


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny-mistral",
                        help="a wirewise registry model or a transformers config.json")
    parser.add_argument("--batch-size", type=int, default=4, help="samples per rank per step")
    parser.add_argument("--seq-len", type=int, default=64, help="tokens per sample")
    parser.add_argument("--steps", type=int, default=30, help="optimizer steps")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--report", help="rank 0 writes what the job saw here (JSON)")
    return parser.parse_args()


def main() -> None:
    args = parse()
    advice = wirewise.advice(model=args.model, batch_size=args.batch_size, seq_len=args.seq_len)

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, Trainer, TrainingArguments

    from wirewise.jobs.history import accelerate_engine
    from wirewise.jobs.trainer_callback import WirewiseCallback
    from wirewise.models import MODELS

    torch.manual_seed(0)
    if args.model in MODELS:
        entry = MODELS[args.model]
        config = AutoConfig.for_model(entry.family, **entry.config)
    else:
        config = AutoConfig.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_config(config)
    data = ArithmeticSequences(config.vocab_size, args.seq_len, samples=args.batch_size * args.steps * advice.num_processes)
    callback = WirewiseCallback(model=args.model, seq_len=args.seq_len)
    run_dir = os.environ.get("WIREWISE_LAUNCH_DIR") or "finetune-output"
    training = TrainingArguments(
        output_dir=os.path.join(run_dir, "trainer"), per_device_train_batch_size=args.batch_size,
        max_steps=args.steps, learning_rate=args.lr, warmup_steps=0, lr_scheduler_type="constant",
        bf16=advice.device == "cuda", use_cpu=advice.device == "cpu", include_num_input_tokens_seen=True,
        logging_steps=max(1, args.steps // 5), save_strategy="no", report_to="none", disable_tqdm=True,
        dataloader_num_workers=0, ddp_find_unused_parameters=False, seed=0,
    )
    trainer = Trainer(model=model, args=training, train_dataset=data, callbacks=[callback])
    trainer.train()

    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    if trainer.is_world_process_zero():
        row = advice.row()
        print(f"{advice.strategy} on {advice.num_processes} rank(s) ({advice.device}): loss {losses[0]:.3f} -> "
              f"{losses[-1]:.3f}; advised {advice.advised}, predicted "
              f"{'-' if row is None or row.tokens_per_s is None else f'{row.tokens_per_s:,.0f}'} tokens/s; "
              f"figures in {callback.result_file}", flush=True)
        if args.report:
            seen = {"advice": advice.to_dict(), "config_in_run_dir": advice.config_in(run_dir),
                    "accelerate": accelerate_engine(), "losses": losses,
                    "result_file": str(callback.result_file) if callback.result_file else None}
            with open(args.report, "w") as fh:
                json.dump(seen, fh, indent=1)
    # DDP ranks can abort at exit while the reducer lives on into interpreter teardown
    # (docs/facts.md): free the Trainer's model first, then end every rank together.
    del trainer, model
    gc.collect()
    if torch.distributed.is_initialized():
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


class ArithmeticSequences:
    """Token sequences start, start + step, start + 2 step, ... (mod vocabulary): a task with a
    rule to learn, built on the fly, the same on every rank for a given index."""

    def __init__(self, vocab: int, seq_len: int, samples: int) -> None:
        self.vocab, self.seq_len, self.samples = vocab, seq_len, samples

    def __len__(self) -> int:
        return self.samples

    def __getitem__(self, index: int):
        import torch

        start, step = index * 7919 % self.vocab, 1 + index % 3
        ids = (start + step * torch.arange(self.seq_len)) % self.vocab
        return {"input_ids": ids, "labels": ids.clone(), "attention_mask": torch.ones_like(ids)}


if __name__ == "__main__":
    main()
