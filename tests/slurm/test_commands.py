"""The one runner for Slurm commands (wirewise.orchestrator.slurm.command) and the parsers of
what Slurm prints about nodes (wirewise.orchestrator.slurm.nodes: one `sinfo -N` format, one
SlurmNode). The runner's answers, errors
and timeout are seen through real processes: small scripts named scontrol and squeue first on
PATH (the real cluster's commands are used by tests/placement/test_run_slurm.py and
tests/campaign/test_slurm.py through the same runner)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wirewise.errors import UserError
from wirewise.orchestrator.slurm.command import SlurmError, SlurmTimeout, SlurmUnavailable, slurm
from wirewise.orchestrator.slurm.nodes import leaf_switches_from, used_from_scontrol


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch) -> Path:
    """A folder that alone is PATH: only the commands a test writes there exist."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))
    return folder


def command(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def test_arguments_and_fields_arrive_one_each(fake_bin) -> None:
    command(fake_bin, "scontrol", 'for a in "$@"; do echo "[$a]"; done')
    out = slurm("scontrol", "update", NodeName="gpu01", State="DRAIN", Reason="wirewise:busbw 5% low")
    assert out.splitlines() == ["[update]", "[NodeName=gpu01]", "[State=DRAIN]", "[Reason=wirewise:busbw 5% low]"]


def test_a_failure_is_one_line_with_slurms_first_line(fake_bin) -> None:
    command(fake_bin, "scontrol", 'echo "scontrol: error: Invalid node name specified" >&2; echo more >&2; exit 1')
    with pytest.raises(SlurmError) as caught:
        slurm("scontrol", "show", "node", "ghost")
    assert str(caught.value) == "scontrol show failed: scontrol: error: Invalid node name specified"
    assert caught.value.reason == "scontrol: error: Invalid node name specified"
    assert slurm("scontrol", "show", "node", "ghost", or_none=True) is None  # a "no" that comes as an error


def test_a_silent_controller_is_a_timeout_even_with_or_none(fake_bin) -> None:
    command(fake_bin, "squeue", "exec /bin/sleep 30")
    with pytest.raises(SlurmTimeout, match=r"squeue -h did not answer within 0.5 s \(is slurmctld up\?\)"):
        slurm("squeue", "-h", timeout=0.5, or_none=True)


def test_a_missing_command_says_where_to_run(fake_bin) -> None:
    with pytest.raises(SlurmUnavailable, match="sacct not found: run this where the Slurm client commands are installed"):
        slurm("sacct", "-X", or_none=True)


def test_what_the_runner_refuses(fake_bin) -> None:
    with pytest.raises(ValueError, match="not a Slurm command"):
        slurm("rm", "-rf", "/")
    with pytest.raises(UserError, match="may not hold a line break"):
        slurm("scontrol", "update", NodeName="gpu01", Reason="ok\nState=RESUME")


NODE = """NodeName=gpu01 Arch=x86_64 CoresPerSocket=48
   Gres=gpu:h200:8(S:0-1)
   GresDrain=N/A
   GresUsed={used}
   NodeAddr=gpu01 NodeHostName=gpu01"""


@pytest.mark.parametrize(
    ("used", "expected"),
    [
        ("gpu:h200:2(IDX:0-1)", {0, 1}),
        ("gpu:h200:4(IDX:0,2,5-6)", {0, 2, 5, 6}),
        ("gpu:h100:1(IDX:3),gpu:a100:2(IDX:6-7)", {3, 6, 7}),
        ("gpu:h200:0(IDX:N/A)", set()),
        ("gpu:(null):0(IDX:N/A)", set()),
        ("gpu:0", set()),
    ],
)
def test_gres_used_indices(used: str, expected: set[int]) -> None:
    assert used_from_scontrol(NODE.format(used=used)) == expected


def test_leaf_switches_from_scontrol_show_topology() -> None:
    text = (
        "SwitchName=s0 Level=0 LinkSpeed=1 Nodes=gpu[01-02]\n"
        "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=gpu03\n"
        "SwitchName=top Level=1 LinkSpeed=1 Switches=s[0-1]\n"
    )
    assert leaf_switches_from(text) == {"gpu01": "s0", "gpu02": "s0", "gpu03": "s1"}


# `sinfo -h -N -o SINFO_FIELDS` of a cluster, in the shapes Slurm prints: a node in two
# partitions (one line each, the default one marked '*'), GRES of two GPU types with socket
# bindings and untyped ones, '(null)' features and GRES, states with their flags (not responding
# '*', powered off '~', planned '-'), drained and draining, a user and time where no reason is
# set, and reasons holding the separator.
SINFO = """gpu01|gpu*|idle|gpu:h200:8(S:0-1)|nvl,ib|root(0)|2026-12-01T10:00:00|none
gpu01|long|idle|gpu:h200:8(S:0-1)|nvl,ib|root(0)|2026-12-01T10:00:00|none
gpu02|gpu*|down*|gpu:h200:8(S:0-1)|nvl,ib|slurm(64030)|2026-12-01T08:00:00|Not responding
gpu03|gpu*|mixed-|gpu:a100:2,gpu:v100:2,nic:1|mixed|Unknown|Unknown|none
gpu04|gpu*|idle~|gpu:4|(null)|Unknown|Unknown|none
gpu05|gpu*|drained|gpu:4|(null)|alice(1001)|2026-12-01T09:12:44|PSU swap | ticket 4711
gpu05|long|drained|gpu:4|(null)|alice(1001)|2026-12-01T09:12:44|PSU swap | ticket 4711
gpu06|long|draining|gpu:h200:8(S:0-1)|nvl|root(0)|2026-12-01T11:00:00|wirewise:busbw-below-baseline:all_reduce.busbw:-12.4%
cpu01|cpu|allocated|(null)|(null)|Unknown|Unknown|none
"""


def test_one_sinfo_line_per_node_and_partition_is_one_node() -> None:
    from wirewise.orchestrator.slurm.nodes import parse_sinfo

    nodes = parse_sinfo(SINFO)
    assert list(nodes) == ["gpu01", "gpu02", "gpu03", "gpu04", "gpu05", "gpu06", "cpu01"]
    assert (nodes["gpu01"].partitions, nodes["gpu01"].gpus, nodes["gpu01"].features) == (("gpu", "long"), 8, ("nvl", "ib"))
    assert (nodes["gpu03"].gpus, nodes["gpu04"].gpus, nodes["gpu04"].features, nodes["cpu01"].gpus) == (4, 4, (), 0)
    assert [(n.state, n.flag, n.responding) for n in (nodes["gpu02"], nodes["gpu03"], nodes["gpu04"])] == [
        ("down", "*", False), ("mixed", "-", True), ("idle", "~", True)]
    assert {name: n.unavailable for name, n in nodes.items()} == {
        "gpu01": None, "gpu02": "down, not responding", "gpu03": None, "gpu04": None, "gpu05": "drained",
        "gpu06": "draining", "cpu01": None}
    drained = nodes["gpu05"]
    assert (drained.reason, drained.reason_by, drained.reason_at) == ("PSU swap | ticket 4711", "alice(1001)", "2026-12-01T09:12:44")
    assert (drained.partitions, drained.drained, drained.available) == (("gpu", "long"), True, False)
    assert nodes["gpu06"].drained and nodes["gpu06"].reason.startswith("wirewise:busbw-below-baseline:")
    assert (nodes["gpu01"].reason, nodes["gpu01"].reason_by, nodes["gpu01"].reason_at) == (None, None, None)


# A stand-in for sinfo that filters by -p and -n as Slurm does, and writes down what it was asked.
FAKE_SINFO = """#!{python}
import sys
from wirewise.jobenv import hostnames
args = sys.argv[1:]
open({calls!r}, "a").write(" ".join(args) + "\\n")
partitions = args[args.index("-p") + 1].split(",") if "-p" in args else None
names = hostnames(args[args.index("-n") + 1]) if "-n" in args else None
for line in {lines!r}:
    name, partition = line.split("|")[:2]
    if (partitions is None or partition.rstrip("*") in partitions) and (names is None or name in names):
        print(line)
"""


def test_the_nodes_of_a_scope_from_one_sinfo(fake_bin, tmp_path) -> None:
    import sys

    from wirewise.orchestrator.slurm.nodes import SINFO_FIELDS, select_nodes

    calls = tmp_path / "calls"
    (fake_bin / "sinfo").write_text(FAKE_SINFO.format(python=sys.executable, calls=str(calls), lines=SINFO.splitlines()))
    (fake_bin / "sinfo").chmod(0o755)
    labels = {"constraint": "target.constraint", "nodelist": "target.nodelist"}
    assert [n.name for n in select_nodes("gpu", None, "nvl&ib", labels)] == ["gpu01", "gpu02"]
    assert [n.name for n in select_nodes("gpu", None, "[nvl|mixed]&!ib", labels)] == ["gpu03"]
    with pytest.raises(UserError, match=r"^target.constraint h100: no node has it \(their features: ib, mixed, nvl\)$"):
        select_nodes("gpu", None, "h100", labels)
    with pytest.raises(UserError, match=r"^target.constraint nvl\*2: a count"):
        select_nodes("gpu", None, "nvl*2", labels)
    with pytest.raises(UserError, match=r"^target.constraint nvl&: not a constraint expression"):
        select_nodes("gpu", None, "nvl&", labels)
    with pytest.raises(UserError, match=r"^target.nodelist gpu\[01-09\]: Slurm knows no node gpu07, gpu08, gpu09 \(`sinfo"):
        select_nodes(None, "gpu[01-09]", None, labels)
    long = select_nodes("long", "gpu[01-05]", None, labels)  # asked without -p: gpu02 is known, not in long
    assert [(n.name, n.partitions) for n in long] == [("gpu01", ("long",)), ("gpu05", ("long",))]
    with pytest.raises(UserError, match=r"^target.nodelist gpu\[02-03\]: none of these nodes is in partition long$"):
        select_nodes("long", "gpu[02-03]", None, labels)
    # one sinfo per scope, all fields in it; with a node list the partition is filtered here
    assert calls.read_text().splitlines() == [f"-h -N -o {SINFO_FIELDS} {where}" for where in (
        *["-p gpu"] * 5, "-n gpu[01-09]", "-n gpu[01-05]", "-n gpu[02-03]")]
