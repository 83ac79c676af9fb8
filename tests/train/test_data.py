"""Local datasets: a Food-101-style image folder and an Alpaca-style instruction file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wirewise.jobs.train.data import ByteTokenizer, format_instruction
from wirewise.models import image_classes, read_instructions
from tests.train.conftest import QUICK, bench_train

ALPACA = [
    {"instruction": "Give three tips for staying healthy.", "input": "", "output": "Eat well, move, sleep."},
    {"instruction": "Translate to French.", "input": "Good morning", "output": "Bonjour"},
    {"instruction": "Name a primary colour.", "input": "", "output": "Blue."},
]


def make_food101(root: Path, classes=("apple_pie", "baklava", "ramen"), per_class=4) -> Path:
    """Food-101's layout: images/<class>/<id>.jpg and meta/classes.txt."""
    from PIL import Image

    for i, name in enumerate(classes):
        folder = root / "images" / name
        folder.mkdir(parents=True)
        for j in range(per_class):
            Image.new("RGB", (80 + 7 * j, 64), color=(40 * i, 20 * j, 90)).save(folder / f"{1000 + j}.jpg")
    (root / "meta").mkdir()
    (root / "meta" / "classes.txt").write_text("\n".join(classes) + "\n")
    return root


def test_image_classes_follow_meta_order(tmp_path):
    root = make_food101(tmp_path / "food", classes=("zucchini", "apple_pie"))
    images, names = image_classes(root)
    assert images == root / "images" and names == ["zucchini", "apple_pie"]  # classes.txt order, not sorted


def test_instruction_records_and_byte_fallback(tmp_path):
    path = tmp_path / "alpaca.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in ALPACA))
    records = read_instructions(path)
    assert records == ALPACA
    text = format_instruction(records[1])
    assert "### Instruction:\nTranslate to French." in text and "### Input:\nGood morning" in text
    assert "### Input" not in format_instruction(records[0])  # no empty input block
    ids = ByteTokenizer(vocab_size=512).encode("hé")
    assert ids == [1, ord("h") + 3, 0xC3 + 3, 0xA9 + 3, 2]  # bos, UTF-8 bytes + 3, eos
    assert max(ByteTokenizer(vocab_size=64).encode("~~~")) < 64  # wraps into a small vocabulary


@pytest.mark.slow
def test_tiny_dinov2_trains_on_food101_folder(tmp_path, train_env, db_url):
    root = make_food101(tmp_path / "food101")
    code, record, err = bench_train(
        "--model", "tiny-dinov2", "--strategy", "fsdp", *QUICK, "--data", str(root), env=train_env, db=db_url
    )
    assert code == 0 and record["status"] == "ok", err or record["error"]
    assert "image folder" in record["extra"]["data"] and "(3 classes)" in record["extra"]["data"]


@pytest.mark.slow
def test_tiny_mistral_trains_on_alpaca_json(tmp_path, train_env, db_url):
    path = tmp_path / "alpaca_data.json"
    path.write_text(json.dumps(ALPACA * 4))
    code, record, err = bench_train(
        "--model", "tiny-mistral", "--strategy", "zero2", *QUICK, "--data", str(path), env=train_env, db=db_url
    )
    assert code == 0 and record["status"] == "ok", err or record["error"]
    assert "byte-level fallback" in record["extra"]["data"]
    assert record["extra"]["losses"][-1] < record["extra"]["losses"][0]
