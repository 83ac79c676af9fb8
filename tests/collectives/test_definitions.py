"""Sizes, element counts and bus-bandwidth factors against nccl-tests' own numbers (no processes)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from wirewise.units import bytes_text, parse_size
from wirewise.workloads.collective import OP_NAMES, CollectiveParams, sweep_sizes


def test_every_op_name_has_a_descriptor():
    from wirewise.jobs.collectives.ops import OPS

    assert tuple(OPS) == OP_NAMES


@pytest.mark.parametrize(
    ("text", "expected"),
    [("64", 64), ("4K", 4096), ("1M", 1024**2), ("1m", 1024**2), ("1G", 1024**3), ("1.5M", 1572864), ("256MB", 256 * 1024**2)],
)
def test_sizes_read_like_nccl_tests(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "M", "1X", "-1M", "1 0", "0"])
def test_bad_sizes_are_refused(text):
    with pytest.raises(ValueError):
        parse_size(text)


@pytest.mark.parametrize(
    ("n", "size", "bound", "memory", "gb"),
    [(64, "64B", "64 bytes", "64 B", "0.00"),
     (4096, "4K", "4 KiB", "4.10 kB", "0.00"),
     (3 * 1024**2, "3M", "3 MiB", "3.15 MB", "0.00"),
     (1024**3, "1G", "1 GiB", "1.07 GB", "1.07"),
     (80 * 10**9, "78125000K", "78125000 KiB", "80.00 GB", "80.00")],
)
def test_one_writer_of_byte_counts(n, size, bound, memory, gb):
    """wirewise.units.bytes_text is every side's writer of a byte count (issue 34): a message
    size as nccl-tests spells it, a bound in IEC units, memory in powers of ten."""
    assert (bytes_text(n), bytes_text(n, "bound"), bytes_text(n, "memory"), bytes_text(n, "GB")) == (size, bound, memory, gb)
    assert parse_size(bytes_text(n)) == n  # a size reads back as the same count
    assert n < 1024 or parse_size(bytes_text(n, "bound")) == n
    with pytest.raises(ValueError, match="no byte form"):
        bytes_text(n, "GiB")


def test_sweep_is_nccl_tests_size_column():
    assert sweep_sizes(1024**2, 1024**3, 2) == [1024**2 * 2**i for i in range(11)]
    assert sweep_sizes(1000, 9000, 3) == [1000, 3000, 9000]
    assert sweep_sizes(64, 64, 2) == [64]


def test_params_validate_and_normalise():
    p = CollectiveParams.model_validate({"ops": "all_gather,all_reduce,all_gather", "min_bytes": "1K", "max_bytes": "1M", "dtype": "bf16"})
    assert p.ops == ["all_gather", "all_reduce"]
    assert (p.min_bytes, p.max_bytes, p.dtype, p.element_bytes) == (1024, 1024**2, "bfloat16", 2)
    for bad in ({"min_bytes": "2M", "max_bytes": "1M"}, {"ops": "all_reduce,bogus"}, {"dtype": "int8"}, {"step_factor": 1}, {"iters": 0}):
        with pytest.raises(ValidationError):
            CollectiveParams.model_validate(bad)


def test_the_element_table_is_torchs_and_both_sides_read_it():
    """wirewise.dtypes is the one table of element sizes: each size is torch's for that name,
    every type a sweep measures is in it, and nccl-tests' names read as the same element."""
    import torch

    from wirewise.dtypes import ELEMENT_BYTES, ELEMENT_TYPES, NCCL_TESTS_TYPES
    from wirewise.workloads.collective import SWEEP_DTYPES

    for element in ELEMENT_TYPES:
        assert torch.empty(0, dtype=getattr(torch, element.name)).element_size() == element.bytes, element
    for dtype in SWEEP_DTYPES:
        assert CollectiveParams(dtype=dtype).element_bytes == ELEMENT_BYTES[dtype]
    assert {printed: e.name for printed, e in NCCL_TESTS_TYPES.items() if printed in ("float", "half", "double", "bfloat16")} == {
        "float": "float32", "half": "float16", "double": "float64", "bfloat16": "bfloat16"}


def test_all_gather_counts_match_the_old_nccl_tests_log():
    """8 ranks, float: nccl-tests rounds each rank's chunk down to whole 16-byte lines, so
    4..64 B print as 0 and 128 B as count 4 (tests/fixtures/nccl-tests, the Polaris log)."""
    from wirewise.jobs.collectives.ops import OPS

    geometry = [OPS["all_gather"].geometry(size, 8, 4) for size in (4, 8, 16, 32, 64, 128, 1024**3)]
    assert [(g.nbytes, g.count) for g in geometry] == [(0, 0)] * 5 + [(128, 4), (1073741824, 33554432)]


def test_counts_per_op_at_three_ranks():
    from wirewise.jobs.collectives.ops import OPS

    # all_reduce/broadcast: the whole buffer; chunked ops: per rank (per peer for all_to_all).
    assert OPS["all_reduce"].geometry(1000, 3, 4) == OPS["broadcast"].geometry(1000, 3, 4)
    assert (OPS["all_reduce"].geometry(1000, 3, 4).count, OPS["all_reduce"].geometry(1000, 3, 4).nbytes) == (250, 1000)
    for op in ("all_gather", "reduce_scatter", "all_to_all"):
        g = OPS[op].geometry(4096, 3, 4)  # 4096/4/3 = 341 elements, down to a multiple of 4 = 340
        assert (g.count, g.nbytes) == (340, 340 * 3 * 4)
    bf16 = OPS["all_gather"].geometry(4096, 3, 2)  # 682 elements, down to a multiple of 8 = 680
    assert (bf16.count, bf16.nbytes) == (680, 680 * 3 * 2)


# busbw / algbw from nccl-tests' doc/PERFORMANCE.md, as numbers: (all_reduce, chunked ops, broadcast, NVLS all_reduce).
@pytest.mark.parametrize(
    ("n", "all_reduce", "chunked", "nvls"),
    [(1, 0.0, 0.0, 0.0), (2, 1.0, 0.5, 1 / 3), (3, 4 / 3, 2 / 3, 0.5), (8, 1.75, 0.875, 7 / 9)],
)
def test_bus_bandwidth_factors(n, all_reduce, chunked, nvls, monkeypatch):
    from wirewise.jobs.collectives.ops import OPS

    monkeypatch.delenv("NCCL_ALGO", raising=False)
    assert OPS["all_reduce"].busbw_factor(n) == pytest.approx(all_reduce)
    for op in ("all_gather", "reduce_scatter", "all_to_all"):
        assert OPS[op].busbw_factor(n) == pytest.approx(chunked)
    assert OPS["broadcast"].busbw_factor(n) == 1.0
    monkeypatch.setenv("NCCL_ALGO", "NVLS")  # nccl-tests' NVLS all-reduce factor
    assert OPS["all_reduce"].busbw_factor(n) == pytest.approx(nvls)


def test_pcie_transport_notes_nvls_only_where_nccl_could_use_it():
    from wirewise.workloads.collective import transport_note

    assert "NCCL_NVLS_ENABLE=unset" in transport_note("pcie", "nccl", 4, None)
    assert "NCCL_NVLS_ENABLE=1" in transport_note("pcie", "nccl", 8, "1")
    for args in (("default", "nccl", 8, None), ("pcie", "gloo", 8, None), ("pcie", "nccl", 2, None), ("pcie", "nccl", 8, "0")):
        assert transport_note(*args) is None, args


# Rows and footer that nccl-tests 2.17.8 itself printed for all_reduce on 8x H100 SXM
# (tests/fixtures/nccl-tests/nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt):
# size (B), time (us), algbw, busbw (GB/s), out of place.
H100_ROWS = [(1073741824, 4000.82, 268.38, 469.67), (8589934592, 31226.8, 275.08, 481.39)]


@pytest.mark.parametrize(("nbytes", "time_us", "algbw", "busbw"), H100_ROWS)
def test_bandwidths_match_what_nccl_tests_printed(nbytes, time_us, algbw, busbw):
    """algbw = bytes / time and busbw = algbw x 2(n-1)/n at 8 ranks reproduce nccl-tests' own
    columns to their printed precision."""
    from wirewise.jobs.collectives.ops import OPS

    measured_algbw = nbytes / (time_us * 1e-6) / 1e9
    assert measured_algbw == pytest.approx(algbw, abs=0.01)
    assert measured_algbw * OPS["all_reduce"].busbw_factor(8) == pytest.approx(busbw, abs=0.02)


def test_sweep_average_is_nccl_tests_footer():
    """'Avg bus bandwidth' over the log's 20 busbw values (10 sizes, out of place and in place) is
    437.957, as nccl-tests printed it."""
    from wirewise.jobs.collectives.loop import add_sweep_averages
    from tests.conftest import FIXTURES

    log = FIXTURES / "nccl-tests" / "nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt"
    rows = []
    for line in log.read_text().splitlines():
        cells = line.split()
        if len(cells) == 13 and cells[0].isdigit():
            rows += [{"op": "all_reduce", "busbw_gbs": float(cells[7]), "extra": {}},
                     {"op": "all_reduce", "busbw_gbs": float(cells[11]), "extra": {}}]
    add_sweep_averages(rows)
    assert len(rows) == 20
    assert {round(r["extra"]["avg_busbw_gbs"], 3) for r in rows} == {437.957}
