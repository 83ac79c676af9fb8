"""Read nccl-tests logs (NVIDIA/nccl-tests `*_perf` stdout, and ROCm/rccl-tests') into result
records, as people keep them: every format since 2.0, several runs in one file, pasted from a
terminal or a README, saved in any encoding (log_text: a byte-order mark, UTF-16, Latin-1).

What a run prints (src/common.cu), old format or new:
- optional `# nccl-tests version X nccl-headers=C nccl-library=C` and
  `# Collective test starting: all_reduce_perf` (before 2.17 neither);
- `# nThread 1 nGpus 1 minBytes ... iters: 20 ...`: the settings;
- rccl-tests: `# rccl-tests version X rccl-headers=C rccl-library=C`, or before 2.17
  `rccl-tests: Version develop:5272cd1` after the settings line; RCCL's own
  `RCCL version : 2.22.3-HEAD:7d8d67c` (NCCL_DEBUG=VERSION) after the rank lines;
- `#  Rank  0 Group  0 Pid 123 on HOST device  0 [BUS] NAME` (before 2.6 without Group, 2.0
  without Pid, rccl-tests since 2025 without NAME): one line per rank, the hosts, GPU indices
  and models;
- a header naming the columns, then one row per size (rows);
- `# Out of bounds values : N OK|FAILED`, `# Avg bus bandwidth : X`,
  `# Collective test concluded: ...`;
- or, when a run dies, `HOST: Test NCCL failure common.cu:401 'remote process exited or
  there was a network error / '` and no rows or footer.

Streaming. The log is read a line at a time (log_text.LogText) and each run keeps its rows in
two arrays (rows.RowTable, ~130 bytes a row) and its own lines' facts, never the text; records
are made from the rows while they are stored, a batch at a time: memory is a constant plus the
rows and runs kept, whatever the log's size (issue 29: a 20 MB log held 1.3 GB read whole;
tests/benchmarks/bench_import_nccl_tests.py measures 200 MB).

One module per job, each stating its part of the design:
- reading a log: reader (the text -> sections), sections (one run), rows (a row's columns),
  commands (a command line that ran a run);
- inference (which op, how many ranks) and validation (nccl-tests' tolerances);
- identity (a run's hash and record ids, repeats in a file, rows stored already);
- options (what --op, --ranks, --transport and --env tell of the runs);
- records (the sections as result records), importing (a log file read and stored),
  summary (what the CLI prints of it).
This module only names what callers use.
"""

from wirewise.orchestrator.record.nccl_tests.importing import read_log_file
from wirewise.orchestrator.record.nccl_tests.inference import KNOWN_OPS, UnknownOp
from wirewise.orchestrator.record.nccl_tests.options import HowItRan
from wirewise.orchestrator.record.nccl_tests.reader import parse_log
from wirewise.orchestrator.record.nccl_tests.records import log_records

__all__ = ["KNOWN_OPS", "HowItRan", "UnknownOp", "log_records", "parse_log", "read_log_file"]
