"""The Hugging Face Trainer's way into the history: `trainer.add_callback(WirewiseCallback())`.

It times each optimizer step (the interval between step ends, after a device sync on a GPU:
data loading, forward, backward and the step, as the job lives them), counts this rank's
samples per step from the TrainingArguments and its tokens from the Trainer's own count
(`include_num_input_tokens_seen`, all ranks' tokens, shared out evenly) or from `seq_len`, and
at the end of training hands them to wirewise.jobs.history.record_job on every rank. Importing
this module imports transformers; wirewise.jobs.history does not.
"""

from __future__ import annotations

import time

from transformers import TrainerCallback

from wirewise.clock import utcnow
from wirewise.jobs.history import DEFAULT_WARMUP_STEPS, record_job


class WirewiseCallback(TrainerCallback):
    """Records the job's steady-state tokens/s, step time and peak memory per rank (source=job).

    `model`: the name results are stored under (default: the one `wirewise launch --model`
    gave); `seq_len`: tokens per sample, where the Trainer does not count tokens itself;
    `warmup_steps`: steps left out at the start; `db`: where to store (default: the setting db, as every command resolves it)."""

    def __init__(self, model: str | None = None, seq_len: int | None = None,
                 warmup_steps: int = DEFAULT_WARMUP_STEPS, db: str | None = None) -> None:
        self.model, self.seq_len, self.warmup_steps, self.db = model, seq_len, warmup_steps, db
        self.result_file = None  # rank 0's result file, once training has ended
        self._times: list[float] = []
        self._tokens: list[int] = []

    def on_train_begin(self, args, state, control, **kwargs):
        self._times, self._tokens = [], []
        self._started = utcnow()
        self._last = time.perf_counter()
        self._seen = state.num_input_tokens_seen

    def on_step_end(self, args, state, control, **kwargs):
        _synchronize()
        now = time.perf_counter()
        self._times.append(now - self._last)
        self._tokens.append(state.num_input_tokens_seen - self._seen)
        self._last, self._seen = now, state.num_input_tokens_seen

    def on_train_end(self, args, state, control, **kwargs):
        if len(self._times) <= self.warmup_steps:
            return  # too short to have a steady state: nothing to record
        samples = args.per_device_train_batch_size * args.gradient_accumulation_steps
        counted = self._tokens[self.warmup_steps:]
        if any(counted):  # the Trainer counts every rank's tokens
            tokens = sum(counted) / len(counted) / max(1, args.world_size)
        elif self.seq_len:
            tokens = samples * self.seq_len
        else:
            tokens = None
        seq_len = self.seq_len or (round(tokens / samples) if tokens else None)
        self.result_file = record_job(
            self._times, tokens_per_step=tokens, samples_per_step=samples, warmup_steps=self.warmup_steps,
            model=self.model, micro_batch=args.per_device_train_batch_size, seq_len=seq_len,
            db=self.db, started_at=self._started,
            extra={"trainer": {"global_steps": state.global_step, "gradient_accumulation_steps": args.gradient_accumulation_steps}},
        )


def _synchronize() -> None:
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
