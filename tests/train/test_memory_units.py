"""Memory in one unit: GB of 10^9 bytes (wirewise.units.GB) in `estimate --gpu-mem-gb`, `bench
train --memory-limit-gb` and the report. Before, the cap was GiB: `--memory-limit-gb 80` let a
rank use 85.9 GB, 7.4% more than the 80 GB card the estimate says a strategy does not fit.

No GPU exists here: the device the cap is set on is a stand-in (its total memory and the
allocator's fraction), recorded as torch.cuda would take it."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from wirewise.jobs.train.loop import apply_memory_limit
from wirewise.orchestrator.advise.estimate import estimate
from wirewise.units import GB

H200_BYTES = 150_754_820_096  # an H200 as NVML and torch report it


def test_the_cap_is_the_same_gb_as_the_estimates_card(monkeypatch):
    set_fraction = []
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: SimpleNamespace(total_memory=H200_BYTES))
    monkeypatch.setattr(torch.cuda, "set_per_process_memory_fraction", lambda f, device: set_fraction.append(f))
    limit = apply_memory_limit(80, SimpleNamespace(type="cuda"))
    assert limit["memory_limit_bytes"] == 80 * 10**9 == 80 * GB
    assert set_fraction == [80e9 / H200_BYTES] == [limit["memory_fraction"]]
    # The estimate's card of --gpu-mem-gb 80 holds what a job may use of 80 x 10^9 bytes.
    ddp = estimate("mistral-7b", 1, ["ddp"], seq_len=512, gpu_mem_gb=80)
    assert ddp["gpu_mem_gb"] == 80 and ddp["strategies"][0]["fits"] is False  # README: "does not fit an 80 GB card"


def test_the_report_says_memory_in_gb():
    from rich.console import Console

    from wirewise.orchestrator.report.tables import _SHOWN as COLUMNS
    from wirewise.orchestrator.report.train import summary_table
    from wirewise.record import ResultRecord

    record = ResultRecord(workload="train", model="mistral-7b", strategy="ddp", world_size=1, micro_batch=1, seq_len=512,
                          step_time_s=0.5, samples_per_s=2.0, tokens_per_s=1024.0, peak_mem_bytes=[80 * 10**9],
                          model_state_bytes=[115_867_713_536], extra={"losses": [2.0, 1.5]})
    console = Console(width=100, record=True, file=open("/dev/null", "w"))
    console.print(summary_table(record))
    text = console.export_text()
    assert "80.00 GB" in text and "115.87 GB" in text and "GiB" not in text
    header, shown = COLUMNS["peak_mem_bytes"]
    assert (header, shown(80 * 10**9)) == ("peak GB", "80.00")
