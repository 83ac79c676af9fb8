"""The nccl-tests-shaped table `wirewise bench collectives` prints (and tests/gpu/collectives_check.sh reuses)."""

from __future__ import annotations

from wirewise.orchestrator.report.collectives import SweepLines, format_report, format_table


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
    assert lines[-3:] == [
        "# wirewise collectives: 2 rank(s), backend nccl on cuda, GPUs 0,1",
        "# node n1, transport pcie, timing eager",
        f"# fabric nvlink-groups, fingerprint {'ab' * 6}, task t1",
    ]
    assert "# all_reduce" in lines and "# all_gather" in lines
    data = [line.split() for line in lines if not line.startswith("#")]
    assert data == [
        ["1024", "256", "float32", "sum", "-1", "in", "12.35", "0.50", "1.00", "0"],
        ["2048", "512", "float32", "sum", "-1", "in", "123.5", "2.00", "4.00", "N/A"],
        ["1024", "256", "float32", "none", "-1", "out", "12346", "3.50", "7.00", "3"],
    ]
    assert [line for line in lines if line.startswith("# Avg")] == ["# Avg bus bandwidth    : 2.5", "# Avg bus bandwidth    : 7"]
    assert max(map(len, lines)) <= 80, [line for line in lines if len(line) > 80]


def test_report_without_gpus_or_fingerprint():
    lines = format_report([_row("all_reduce", 1024, 1.0, 0.0, None, gpus=[], fingerprint=None, fabric=None, device="cpu")])
    assert "GPUs none" in lines[-3] and lines[-1].startswith("# fabric unknown, fingerprint none")


def test_both_forms_of_an_op_are_one_block_in_the_order_measured_with_one_average():
    """nccl-tests prints out of place and in place side by side (120 columns) and averages over
    both; here each form is a row of the op's block, `place` saying which, in the order the
    sweep measures them, so each can be printed as it comes."""
    rows = [
        _row("all_gather", 1024, 10.0, 1.0, 0, in_place=False),
        _row("all_gather", 1024, 9.0, 3.0, 0, in_place=True),
    ]
    lines = format_report([{**r, "cuda_graph": True} for r in rows])
    assert lines[-2].endswith("timing cuda-graph (nccl-tests -G)")
    blocks = [line for line in lines if line.startswith(("# all_gather", "# Avg"))]
    assert blocks == ["# all_gather", "# Avg bus bandwidth    : 2"]
    assert [line.split()[5] for line in lines if not line.startswith("#")] == ["out", "in"]
    assert format_report(rows)[-2].endswith("timing eager")


def test_rows_print_as_they_come_as_the_whole_table_prints_them():
    """SweepLines, fed the ranks' rows one by one (redop and root under extra, as a rank
    measures them), prints what format_table prints for the stored rows: headings with the first
    row of an op, the op's average once the next op begins and at the end."""
    rows = [_row("all_reduce", 1024, 1.0, 2.0, 0), _row("all_gather", 1024, 2.0, 4.0, 0, in_place=False),
            _row("all_gather", 1024, 3.0, 6.0, 0, in_place=True)]
    table, printed = SweepLines(), []
    first = table.row({**rows[0], "extra": {"redop": "sum", "root": -1}})
    assert first[0] == "# all_reduce" and not first[-1].startswith("#")
    printed += first
    for row in rows[1:]:
        measured = {k: v for k, v in row.items() if k not in ("redop", "root")}
        printed += table.row({**measured, "extra": {"redop": row["redop"], "root": row["root"]}})
    assert "# Avg bus bandwidth    : 2" in printed and "# Avg bus bandwidth    : 5" not in printed
    printed += table.end()
    assert printed == format_table(rows) and printed[-2] == "# Avg bus bandwidth    : 5"
