"""Batches for the training benchmark: synthetic by default, or a local dataset.

Every source yields a small pool of ready batches already on the rank's device, cycled
through the run. Reading and decoding happen before the clock starts, so the timed steps
measure the strategy and the wire, not the input pipeline. Synthetic data is one fixed batch
per rank (as benchmarks usually do): the loss then falls step after step, which the tests
use to see that training really happens; a dataset gives up to DATASET_POOL distinct batches.

- synthetic: random token ids (causal LM) or random pixels and labels (image classifier).
- Food-101 layout: `ROOT/images/<class>/<name>.jpg` with `ROOT/meta/classes.txt` (optional;
  otherwise the sorted folder names), or any `ROOT/<class>/<image>` folder.
- Alpaca layout: a JSON list or JSONL of {"instruction", "input", "output"} records. A
  tokenizer is used when the model is a local folder holding one; otherwise (offline, no
  tokenizer) text is encoded byte by byte: id = byte + 3, with 0 pad, 1 bos, 2 eos.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from wirewise.models import check_data_kind, image_classes, read_instructions

SYNTHETIC_POOL = 1  # distinct batches per rank, cycled
DATASET_POOL = 8
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}
BYTE_OFFSET, PAD_ID, BOS_ID, EOS_ID = 3, 0, 1, 2
IGNORE_INDEX = -100  # labels the loss skips (padding)
ALPACA_PROMPT = "### Instruction:\n{instruction}\n\n{input_block}### Response:\n{output}"


@dataclass
class Batches:
    pool: list[dict[str, Any]]
    tokens_per_sample: int  # sequence positions (LM) or patch tokens + CLS (vision)
    source: str  # what the extra records say about the data

    def __getitem__(self, step: int) -> dict[str, Any]:
        return self.pool[step % len(self.pool)]


def make_batches(built, params, rank: int, world_size: int, device, seq_len: int) -> Batches:
    """The pool for this rank: each rank sees different samples, as in data-parallel training."""
    generator = torch.Generator().manual_seed(params.seed * 1000 + rank)
    pool = min(DATASET_POOL, params.total_steps)
    check_data_kind(params.data, built.kind)  # a local config's kind is known only now
    if built.kind == "causal-lm":
        if params.data:
            return _alpaca(Path(params.data), built, params.micro_batch, seq_len, rank, world_size, device, pool)
        return _synthetic_tokens(built.config.vocab_size, params.micro_batch, seq_len, generator, device)
    if params.data:
        return _image_folder(Path(params.data), built, params.micro_batch, rank, world_size, device, pool)
    return _synthetic_images(built.config, params.micro_batch, generator, device)


def dataset_classes(data: str | None) -> int | None:
    """How many classes an image-folder dataset has (None for no data or an instruction file)."""
    if not data or not Path(data).is_dir():
        return None
    return len(image_classes(Path(data))[1])


def vision_tokens(config) -> int:
    return (config.image_size // config.patch_size) ** 2 + 1  # patches + CLS


def _synthetic_tokens(vocab: int, batch: int, seq_len: int, generator, device) -> Batches:
    pool = []
    for _ in range(SYNTHETIC_POOL):
        ids = torch.randint(0, vocab, (batch, seq_len), generator=generator)
        pool.append({"input_ids": ids.to(device), "labels": ids.to(device)})
    return Batches(pool, seq_len, "synthetic token ids")


def _synthetic_images(config, batch: int, generator, device) -> Batches:
    size = config.image_size
    pool = []
    for _ in range(SYNTHETIC_POOL):
        pixels = torch.randn(batch, config.num_channels, size, size, generator=generator)
        labels = torch.randint(0, config.num_labels, (batch,), generator=generator)
        pool.append({"pixel_values": pixels.to(device), "labels": labels.to(device)})
    return Batches(pool, vision_tokens(config), "synthetic images")


# ---------------------------------------------------------------- Food-101 style image folder


def _image_folder(root: Path, built, batch: int, rank: int, world_size: int, device, pool_size: int) -> Batches:
    from PIL import Image

    images, names = image_classes(root)
    files = [
        (path, label)
        for label, name in enumerate(names)
        for path in sorted((images / name).iterdir())
        if path.suffix.lower() in IMAGE_SUFFIXES
    ]
    mine = files[rank::world_size]  # a disjoint slice per rank, like a DistributedSampler
    need = batch * pool_size
    if len(mine) < batch:
        raise ValueError(f"{root}: {len(files)} images give rank {rank} only {len(mine)}, fewer than a batch of {batch}")
    mine = [mine[i % len(mine)] for i in range(0, need)]
    size = built.config.image_size
    mean = torch.tensor(IMAGENET_MEAN).view(3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(3, 1, 1)

    def load(path: Path) -> torch.Tensor:
        with Image.open(path) as img:
            img = _center_square(img.convert("RGB")).resize((size, size), Image.BILINEAR)
            pixels = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8).view(size, size, 3)
        return (pixels.permute(2, 0, 1).float() / 255 - mean) / std

    pool = []
    for start in range(0, need, batch):
        chunk = mine[start : start + batch]
        pixels = torch.stack([load(p) for p, _ in chunk])
        labels = torch.tensor([label for _, label in chunk])
        pool.append({"pixel_values": pixels.to(device), "labels": labels.to(device)})
    return Batches(pool, vision_tokens(built.config), f"image folder {root} ({len(names)} classes)")


def _center_square(img):
    w, h = img.size
    side = min(w, h)
    left, top = (w - side) // 2, (h - side) // 2
    return img.crop((left, top, left + side, top + side))


# ---------------------------------------------------------------- Alpaca style instructions


def format_instruction(record: dict[str, str]) -> str:
    extra = record.get("input") or ""
    input_block = f"### Input:\n{extra}\n\n" if extra else ""
    return ALPACA_PROMPT.format(
        instruction=record.get("instruction", ""), input_block=input_block, output=record.get("output", "")
    )


class ByteTokenizer:
    """Offline fallback: one id per UTF-8 byte; ids beyond the model's vocabulary wrap around."""

    name = "byte-level fallback (no local tokenizer)"

    def __init__(self, vocab_size: int) -> None:
        self.vocab_size = vocab_size

    def encode(self, text: str) -> list[int]:
        ids = [BOS_ID] + [b + BYTE_OFFSET for b in text.encode("utf-8")] + [EOS_ID]
        return [i % self.vocab_size for i in ids]


class HFTokenizer:
    def __init__(self, folder: Path) -> None:
        from transformers import AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        self.name = f"{type(self.tok).__name__} from {folder}"

    def encode(self, text: str) -> list[int]:
        ids = self.tok(text, add_special_tokens=True)["input_ids"]
        return ids + ([self.tok.eos_token_id] if self.tok.eos_token_id is not None else [])


def pick_tokenizer(built):
    if built.tokenizer_dir is not None:
        try:
            return HFTokenizer(built.tokenizer_dir)
        except Exception:  # a model folder with a config but no tokenizer files
            pass
    return ByteTokenizer(built.config.vocab_size)


def _alpaca(path: Path, built, batch: int, seq_len: int, rank: int, world_size: int, device, pool_size: int) -> Batches:
    tokenizer = pick_tokenizer(built)
    records = read_instructions(path)[rank::world_size] or read_instructions(path)
    pool = []
    for start in range(0, batch * pool_size, batch):
        rows = [tokenizer.encode(format_instruction(records[(start + i) % len(records)])) for i in range(batch)]
        ids = torch.full((batch, seq_len), PAD_ID, dtype=torch.long)
        labels = torch.full((batch, seq_len), IGNORE_INDEX, dtype=torch.long)
        for i, row in enumerate(rows):
            row = row[:seq_len]
            ids[i, : len(row)] = torch.tensor(row)
            labels[i, : len(row)] = torch.tensor(row)
        pool.append({"input_ids": ids.to(device), "labels": labels.to(device)})
    return Batches(pool, seq_len, f"instructions {path} ({tokenizer.name})")
