"""The nccl-tests-shaped table `wirewise bench collectives` prints (and tests/gpu/collectives_check.sh reuses)."""

from __future__ import annotations

from wirewise.orchestrator.report.collectives import format_report


def _row(op, nbytes, time_us, busbw, wrong, **over):
    row = {
        "op": op, "bytes": nbytes, "count": nbytes // 4, "dtype": "float32", "in_place": op == "all_reduce",
        "redop": "sum" if op == "all_reduce" else "none", "root": -1, "time_us": time_us, "algbw_gbs": busbw / 2,
        "busbw_gbs": busbw, "wrong": wrong, "avg_busbw_gbs": 2.5 if op == "all_reduce" else 7.0, "ranks": 2,
        "gpus": [0, 1], "backend": "nccl", "device": "cuda", "transport": "pcie", "node": "n1",
        "fabric": "nvlink-groups", "fingerprint": "ab" * 32, "task_id": "t1",
    }
    return {**row, **over}


def test_report_is_a_block_per_op_with_the_sweeps_average():
    rows = [
        _row("all_reduce", 1024, 12.345, 1.0, 0),
        _row("all_reduce", 2048, 123.45, 4.0, None),
        _row("all_gather", 1024, 12345.6, 7.0, 3),
    ]
    lines = format_report(rows)
    assert lines[0] == "# wirewise collectives: 2 rank(s), backend nccl on cuda, GPUs 0,1, transport pcie, node n1, timing eager"
    assert lines[1] == f"# fabric nvlink-groups, fingerprint {'ab' * 6}, task t1"
    assert "# all_reduce (in place)" in lines and "# all_gather (out of place)" in lines
    data = [line.split() for line in lines if not line.startswith("#")]
    assert data == [
        ["1024", "256", "float32", "sum", "-1", "12.35", "0.50", "1.00", "0"],
        ["2048", "512", "float32", "sum", "-1", "123.5", "2.00", "4.00", "N/A"],
        ["1024", "256", "float32", "none", "-1", "12346", "3.50", "7.00", "3"],
    ]
    assert [line for line in lines if line.startswith("# Avg")] == ["# Avg bus bandwidth    : 2.5", "# Avg bus bandwidth    : 7"]


def test_report_without_gpus_or_fingerprint():
    lines = format_report([_row("all_reduce", 1024, 1.0, 0.0, None, gpus=[], fingerprint=None, fabric=None, device="cpu")])
    assert "GPUs none" in lines[0] and lines[1].startswith("# fabric unknown, fingerprint none")


def test_both_forms_of_an_op_print_as_two_blocks_with_one_average():
    """nccl-tests prints out of place and in place side by side and averages over both; here
    each form is its own block and the op's average follows its last block."""
    rows = [
        _row("all_gather", 1024, 10.0, 1.0, 0, in_place=False, avg_busbw_gbs=2.0),
        _row("all_gather", 1024, 9.0, 3.0, 0, in_place=True, avg_busbw_gbs=2.0),
    ]
    lines = format_report([{**r, "cuda_graph": True} for r in rows])
    assert lines[0].endswith("timing cuda-graph (nccl-tests -G)")
    blocks = [line for line in lines if line.startswith(("# all_gather", "# Avg"))]
    assert blocks == ["# all_gather (out of place)", "# all_gather (in place)", "# Avg bus bandwidth    : 2"]
    assert format_report(rows)[0].endswith("timing eager")
