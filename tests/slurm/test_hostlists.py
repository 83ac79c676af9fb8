"""Slurm node lists expanded as Slurm expands them (wirewise.jobenv.hostnames, wirewise's own
parser): the real lists of clusters (zero padding, several brackets in one name, text after a
bracket, ranges of several widths), what Slurm refuses, and a bound before anything expands.

The table is what Slurm 25.11.7's `scontrol show hostnames` printed for each list; the second
test asks that same scontrol again (../shared/slurm's build, unpacked by tests/slurm/daemons.sh;
no daemon is needed to expand a list), so the table cannot drift from Slurm's answer."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.services import unavailable
from wirewise.errors import UserError
from wirewise.jobenv import host_count, hostnames
from wirewise.limits import MAX_NODES
from wirewise.orchestrator.slurm.values import NODELIST

EXPANDED = {
    "gpu[001-004,010]": ["gpu001", "gpu002", "gpu003", "gpu004", "gpu010"],
    "gpu[01-03,07],cpu7": ["gpu01", "gpu02", "gpu03", "gpu07", "cpu7"],
    "a[1-2]-b[3-4]": ["a1-b3", "a1-b4", "a2-b3", "a2-b4"],
    "node[1-2]-ib": ["node1-ib", "node2-ib"],
    "gpu-[1-2].ib": ["gpu-1.ib", "gpu-2.ib"],
    "n[1-2]-ib[3]": ["n1-ib3", "n2-ib3"],
    "n[9-11]": ["n9", "n10", "n11"],  # no padding: the widths grow
    "n[09-11]": ["n09", "n10", "n11"],
    "n[8-010]": ["n8", "n9", "n10"],  # a range is as wide as its first number
    "a[1-02]": ["a1", "a2"],
    "n[0099-101]": ["n0099", "n0100", "n0101"],
    "n[3,1]": ["n3", "n1"],  # Slurm's order, not sorted
    "a[1-2],a[2-3]": ["a1", "a2", "a2", "a3"],  # nor made unique
    "a[1-2][3]": ["a13", "a23"],
    "n[1,3-4]x[7]": ["n1x7", "n3x7", "n4x7"],
    "rack1-n[1-2]": ["rack1-n1", "rack1-n2"],
    "a,b,,c": ["a", "b", "c"],
    "wwn1": ["wwn1"],
}
REFUSED = ["x[5-3]", "x[]", "x[1-2", "x[a-b]", "x[1-2]]", "x[[1-2]"]  # Slurm refuses the first three too


@pytest.mark.parametrize("hostlist", sorted(EXPANDED))
def test_a_node_list_expands_as_slurm_expands_it(hostlist: str) -> None:
    assert hostnames(hostlist) == EXPANDED[hostlist]
    assert host_count(hostlist) == len(EXPANDED[hostlist])
    assert NODELIST.problem(hostlist) is None


@pytest.mark.parametrize("hostlist", REFUSED)
def test_what_is_no_node_list_is_one_line(hostlist: str) -> None:
    with pytest.raises(UserError, match=r"^'.*' is not a Slurm node list such as gpu\[01-04\],gpu07$"):
        hostnames(hostlist)
    assert NODELIST.problem(hostlist) == "not a Slurm node list such as gpu[01-04],gpu07"


def test_a_list_of_too_many_names_is_counted_never_expanded() -> None:
    """10^11 names (and 10^22 in one name of two brackets) are refused at once, by their count."""
    for hostlist in ("gpu[0-99999999999]", "a[0-99999999999]b[0-99999999999]"):
        with pytest.raises(UserError, match=f"names more than {MAX_NODES} nodes"):
            hostnames(hostlist)
        assert NODELIST.problem(hostlist) == f"names more than {MAX_NODES:,} nodes"
    assert len(hostnames(f"n[1-{MAX_NODES}]")) == MAX_NODES


@pytest.fixture(scope="module")
def slurm_25_scontrol(tmp_path_factory) -> tuple[Path, Path]:
    """(Slurm 25.11's scontrol, a slurm.conf it reads): enough for `scontrol show hostnames`."""
    script = (f"set -euo pipefail; PROG=hostlists T0=$EPOCHREALTIME; source {ROOT / 'tests/slurm/daemons.sh'}; "
              "use_slurm25; echo \"${SLURM_BIN%%:*}\"; echo \"$SLURM_PLUGIN_DIR\"")
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        unavailable("Slurm 25.11", proc.stderr)
    bin_dir, plugins = proc.stdout.split()
    conf = tmp_path_factory.mktemp("slurm") / "slurm.conf"
    conf.write_text(f"ClusterName=hostlists\nSlurmctldHost=localhost\nNodeName=n1 CPUs=1\nPartitionName=p Nodes=n1\n"
                    f"PluginDir={plugins}\n")
    return Path(bin_dir) / "scontrol", conf


def test_the_table_is_what_slurm_25_says(slurm_25_scontrol) -> None:
    scontrol, conf = slurm_25_scontrol

    def slurm_says(hostlist: str) -> list[str] | None:
        proc = subprocess.run([str(scontrol), "show", "hostnames", hostlist], capture_output=True, text=True,
                              timeout=60, env={"SLURM_CONF": str(conf), "PATH": "/usr/bin:/bin"})
        return proc.stdout.split() if proc.returncode == 0 and "Invalid" not in proc.stdout + proc.stderr else None

    assert {hostlist: slurm_says(hostlist) for hostlist in EXPANDED} == EXPANDED
    assert [slurm_says(hostlist) for hostlist in REFUSED[:3]] == [None, None, None]
