"""Bad input to `wirewise bench train` is one line on stderr and exit code 2, before any rank starts."""

from __future__ import annotations

import pytest

from wirewise.nvml import gpu_count
from tests.conftest import wirewise

NO_GPU = gpu_count() == 0

CASES = {
    "unknown model": (["--model", "gpt-17", "--strategy", "ddp"], "unknown model 'gpt-17'"),
    "unknown strategy": (["--model", "tiny-mistral", "--strategy", "zero4"], "--strategy: 'zero4' is not one of ddp, fsdp"),
    "bad precision": (["--model", "tiny-mistral", "--strategy", "ddp", "--precision", "fp8"], "--precision 'fp8'"),
    "missing data": (["--model", "tiny-mistral", "--strategy", "ddp", "--data", "/nonexistent/alpaca.json"], "no such file"),
    "data not a list of records": (["--model", "tiny-mistral", "--strategy", "ddp", "--data", "{config}"],
                                   "expected a non-empty JSON list (or JSONL) of instruction records"),
    "data not JSON": (["--model", "tiny-mistral", "--strategy", "ddp", "--data", "{folder}/runs.json"], "not JSON"),
    "image folder without classes": (["--model", "tiny-dinov2", "--strategy", "ddp", "--data", "{folder}/empty"],
                                     "no class folders"),
    "config without model_type": (["--model", "{config}", "--strategy", "ddp"], "has no \"model_type\""),
    "zero batch": (["--model", "tiny-mistral", "--strategy", "ddp", "--batch-size", "0"], "--batch-size 0: "),
    "zero lr": (["--model", "tiny-mistral", "--strategy", "ddp", "--lr", "0"], "--lr 0.0: "),
    "images for a language model": (["--model", "tiny-mistral", "--strategy", "ddp", "--data", "{folder}"],
                                    "trains on a JSON/JSONL instruction file"),
    "compile through accelerate": (["--model", "tiny-mistral", "--strategy", "ddp", "--engine", "accelerate",
                                    "--compile"], "--compile is only wired for --engine native"),
}
CPU_ONLY_CASES = {
    "accelerate on CPU": (["--model", "tiny-mistral", "--strategy", "fsdp", "--engine", "accelerate"], "GPUs only"),
    "GPUs asked, none present": (["--model", "tiny-mistral", "--strategy", "ddp", "--gpus", "0,1"], "no GPU is visible"),
    "memory limit on CPU": (["--model", "tiny-mistral", "--strategy", "ddp", "--memory-limit-gb", "80"], "caps GPU memory"),
}


def _check(args, expected, tmp_path, db_url):
    config = tmp_path / "config.json"
    config.write_text('{"hidden_size": 8}')
    (tmp_path / "runs.json").write_text('[{"instruction": "cut here')
    (tmp_path / "empty").mkdir()
    args = [a.replace("{config}", str(config)).replace("{folder}", str(tmp_path)) for a in args]
    proc = wirewise("bench", "train", *args, "--db", db_url, env={"WIREWISE_RUNS": str(tmp_path / "runs")})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "runs").exists()  # nothing started


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_line_and_exit_2(case, tmp_path, db_url):
    _check(*CASES[case], tmp_path, db_url)


@pytest.mark.skipif(not NO_GPU, reason="checks the refusals of a machine without GPUs")
@pytest.mark.parametrize("case", CPU_ONLY_CASES)
def test_gpu_only_options_are_refused_on_cpu(case, tmp_path, db_url):
    _check(*CPU_ONLY_CASES[case], tmp_path, db_url)
