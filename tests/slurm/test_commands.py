"""The one runner for Slurm commands (wirewise.orchestrator.slurm.command) and the parsers of
what Slurm prints about nodes (wirewise.orchestrator.slurm.nodes). The runner's answers, errors
and timeout are seen through real processes: small scripts named scontrol and squeue first on
PATH (the real cluster's commands are used by tests/placement/test_run_slurm.py and
tests/campaign/test_slurm.py through the same runner)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wirewise.errors import UserError
from wirewise.orchestrator.slurm.command import SlurmError, SlurmTimeout, SlurmUnavailable, slurm
from wirewise.limits import MAX_NODES
from wirewise.orchestrator.slurm.nodes import hostnames, leaf_switches_from, used_from_scontrol


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


def test_node_lists_expand_through_submitit_and_are_bounded_first() -> None:
    assert hostnames("gpu[01-03,07],cpu7") == ["gpu01", "gpu02", "gpu03", "gpu07", "cpu7"]
    assert hostnames("r[1-2]n[1-2]") == ["r1n1", "r1n2", "r2n1", "r2n2"]
    with pytest.raises(UserError, match=f"names more than {MAX_NODES} nodes"):
        hostnames("gpu[0-99999999999]")
    with pytest.raises(UserError, match="not a Slurm node list"):
        hostnames("gpu[01-03")


# `sinfo -h -N -o '%N|%T|%G|%b|%P'` of a cluster: a node in two partitions, GRES of two GPU types
# with socket bindings, states with their flags (not responding '*', drain, powered down '~').
SINFO = """gpu01|idle|gpu:h200:8(S:0-1)|nvl,ib|gpu*
gpu01|idle|gpu:h200:8(S:0-1)|nvl,ib|long
gpu02|down*|gpu:h200:8(S:0-1)|nvl,ib|gpu*
gpu03|mixed+drain|gpu:a100:2,gpu:v100:2,nic:1|mixed|gpu*
gpu04|idle~|gpu:4|(null)|gpu*
cpu01|allocated|(null)|(null)|cpu
"""


def test_the_nodes_of_a_scope_from_one_sinfo(fake_bin) -> None:
    from wirewise.orchestrator.slurm.nodes import nodes_from_sinfo, select_nodes

    nodes = {n.name: n for n in nodes_from_sinfo(SINFO)}
    assert (nodes["gpu01"].partitions, nodes["gpu01"].gpus, nodes["gpu01"].features) == (("gpu", "long"), 8, ("nvl", "ib"))
    assert (nodes["gpu03"].gpus, nodes["gpu04"].features, nodes["cpu01"].gpus) == (4, (), 0)
    assert {name: n.unavailable for name, n in nodes.items()} == {
        "gpu01": None, "gpu02": "down, not responding", "gpu03": "drain", "gpu04": None, "cpu01": None}
    command(fake_bin, "sinfo", f"printf '%s' '{SINFO}'")  # whatever the filters: the test names the nodes itself
    labels = {"constraint": "target.constraint", "nodelist": "target.nodelist"}
    assert [n.name for n in select_nodes("gpu", None, "nvl&ib", labels)] == ["gpu01", "gpu02"]
    assert [n.name for n in select_nodes("gpu", None, "[nvl|mixed]&!ib", labels)] == ["gpu03"]
    with pytest.raises(UserError, match=r"^target.constraint h100: no node has it \(their features: ib, mixed, nvl\)$"):
        select_nodes("gpu", None, "h100", labels)
    with pytest.raises(UserError, match=r"^target.constraint nvl\*2: a count"):
        select_nodes("gpu", None, "nvl*2", labels)
    with pytest.raises(UserError, match=r"^target.constraint nvl&: not a constraint expression"):
        select_nodes("gpu", None, "nvl&", labels)
    with pytest.raises(UserError, match=r"^target.nodelist gpu\[01-09\]: Slurm knows no node gpu05, gpu06, gpu07, gpu08, gpu09 \(`sinfo"):
        select_nodes(None, "gpu[01-09]", None, labels)
