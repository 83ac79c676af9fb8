"""The `nvidia-smi topo -m` parser on every real format of tests/fixtures/topo, and its refusals."""

from __future__ import annotations

import pytest

from wirewise.errors import UserError
from wirewise.topology.parse import parse_topo_text
from tests.conftest import wirewise, wirewise_json
from tests.topology.common import EXPECTED, FIXTURE_NAMES, TOPO, fixture_text


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_every_fixture_parses_to_a_square_matrix(name: str) -> None:
    parsed = parse_topo_text(fixture_text(name), name)
    n = EXPECTED[name]["gpus"]
    assert len(parsed.links) == n
    assert all(len(row) == n for row in parsed.links)
    assert [parsed.links[i][i] for i in range(n)] == ["X"] * n
    assert len(parsed.cpu_affinity) == len(parsed.numa) == len(parsed.gpu_names) == n


def test_ansi_header_with_tabs() -> None:
    parsed = parse_topo_text(fixture_text("synthetic-h200-nvl-8gpu-two-quads.txt"))
    assert parsed.links[0][:5] == ["X", "NV6", "NV6", "NV6", "SYS"]
    assert parsed.cpu_affinity[0] == "0-47,96-143" and parsed.cpu_affinity[7] == "48-95,144-191"
    assert parsed.numa == [0, 0, 0, 0, 1, 1, 1, 1]
    assert parsed.nics == ["mlx5_0", "mlx5_1"]  # from the NIC Legend
    assert parsed.nic_links[0] == ["PIX", "SYS"]


def test_header_that_lost_its_leading_tab_and_mlx5_columns() -> None:
    parsed = parse_topo_text(fixture_text("a100-sxm-4gpu-hgx-nv4-polaris-2nic-mangled-header.txt"))
    assert parsed.nics == ["mlx5_0", "mlx5_1"]
    assert parsed.cpu_affinity == ["24-31,56-63", "16-23,48-55", "8-15,40-47", "0-7,32-39"]
    assert parsed.numa == [3, 2, 1, 0]
    assert parsed.nic_links[1] == ["SYS", "PHB"]


def test_empty_cpu_affinity_under_slurm_and_srun_preamble() -> None:
    parsed = parse_topo_text(fixture_text("a100-pcie-8gpu-nv12-bridge-pairs-empty-affinity-truncated.txt"))
    assert parsed.cpu_affinity[:4] == ["0-15,56-71"] * 4
    assert parsed.cpu_affinity[4:] == [None] * 4  # empty column: the NUMA value must not slide into it
    assert parsed.numa == [0, 0, 0, 0, 1, 1, 1, 1]
    assert parsed.links[6][7] == "NV12" and parsed.nic_links[6] == ["PHB"]


def test_cpu_affinity_printed_as_a_block_below_and_ib_columns() -> None:
    parsed = parse_topo_text(fixture_text("v100-dgx1-8gpu-hybrid-cube-mesh-ib-old-legend.txt"))
    assert parsed.cpu_affinity == ["0-19,40-59"] * 4 + ["20-39,60-79"] * 4
    assert parsed.numa == [None] * 8
    assert parsed.nics == ["ib0", "ib1", "ib2", "ib3"]
    assert parsed.links[0] == ["X", "NV1", "NV1", "NV2", "NV2", "SYS", "SYS", "SYS"]


def test_twelve_nics_with_legend() -> None:
    parsed = parse_topo_text(fixture_text("h100-sxm-8gpu-nvswitch-12nic-numaoff.txt"))
    assert len(parsed.nics) == 12 and parsed.nics[11] == "mlx5_11"
    assert all(len(row) == 12 for row in parsed.nic_links)
    assert parsed.cpu_affinity == ["0-191"] * 8 and parsed.numa == [0] * 8


def test_one_gpu_with_ansi_codes() -> None:
    parsed = parse_topo_text(fixture_text("device-h200-1gpu.txt"))
    assert parsed.links == [["X"]] and parsed.cpu_affinity == ["0-15"] and parsed.numa == [0]


def test_preamble_lines_crlf_and_nvidia_smi_list() -> None:
    body = fixture_text("v100-sxm2-2gpu-nv6-plus-rtx3090-pcie-ansi.txt")
    text = (
        "$ srun -p gpu --gres=gpu:3 nvidia-smi topo -m\n"
        "nvidia-smi topo -m\n"
        "NVIDIA Topology:\n"
        "GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-aaaa-1111)\n"
        "GPU 1: Tesla V100-SXM2-16GB (UUID: GPU-bbbb-2222)\n"
        "GPU 2: Tesla V100-SXM2-16GB (UUID: GPU-cccc-3333)\n"
        + body
    ).replace("\n", "\r\n")
    parsed = parse_topo_text(text)
    assert parsed.links[1][2] == "NV6" and parsed.links[0][1] == "NODE"
    assert parsed.gpu_names == ["NVIDIA GeForce RTX 3090", "Tesla V100-SXM2-16GB", "Tesla V100-SXM2-16GB"]
    assert parsed.uuids == ["GPU-aaaa-1111", "GPU-bbbb-2222", "GPU-cccc-3333"]


def test_old_soc_label_reads_as_sys() -> None:
    text = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tSOC\t0-7\nGPU1\tSOC\t X \t8-15\n"
    assert parse_topo_text(text).links == [["X", "SYS"], ["SYS", "X"]]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hello\nworld\n", "no `nvidia-smi topo -m` matrix found"),
        ("\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV1\tSYS\nGPU1\tNV1\t X \tSYS\n", "row GPU2 is missing"),
        ("\tGPU0\tGPU1\nGPU0\t X \tNV1\nGPU1\tSYS\t X \n", "not symmetric: GPU0-GPU1 is NV1 but GPU1-GPU0 is SYS"),
        ("\tGPU0\tGPU1\nGPU0\t X \tNV1\nGPU1\t X \n", "row GPU1 has 1 entries, expected 2"),
        ("\tGPU0\tGPU1\nGPU0\t X \tFAST\nGPU1\tFAST\t X \n", "'FAST' under GPU1, not a link label"),
        ("\tGPU0\tGPU1\nGPU0\t X \tX\nGPU1\tX\t X \n", "X off the diagonal"),
        ("\tGPU0\tGPU1\nGPU0\t X \tNV2\nGPU0\t X \tNV2\nGPU1\tNV2\t X \n", "row GPU0 appears twice"),
        ("\tGPU0\tGPU1\n\nLegend:\n  X = Self\n", "no GPU rows follow"),
        ("\tGPU0\tGPU2\nGPU0\t X \tNV2\n", "expected GPU0..GPU1 first"),
    ],
)
def test_bad_matrices_are_named(text: str, message: str) -> None:
    with pytest.raises(UserError) as caught:
        parse_topo_text(text, "bad.txt")
    assert message in str(caught.value)
    assert str(caught.value).startswith("topo file bad.txt: ")
    assert "\n" not in str(caught.value)


POLARIS = "a100-sxm-4gpu-hgx-nv4-polaris-2nic-mangled-header.txt"
POLARIS_MARKDOWN = "markdown-table-polaris-a100-4gpu-argonne-user-guide.md"
LOST_TABS = "lost-tabs-dgx-h100-8gpu-12nic-vllm-issue-13855.txt"
FLATTENED = "flattened-one-line-dgx-h100-vllm-issue-13855-summary.md"


def test_a_markdown_table_reads_as_the_matrix_it_shows() -> None:
    """Issue 18: ALCF's Polaris guide retypes `nvidia-smi topo -m` as a Markdown table with the
    affinity columns first and the row names third; its header names every column, so it reads
    as Polaris' own output does (tests/fixtures/topo/SOURCES), other tables of the page ignored."""
    table, printed = parse_topo_text(fixture_text(POLARIS_MARKDOWN)), parse_topo_text(fixture_text(POLARIS))
    assert table.links == printed.links and table.links[0] == ["X", "NV4", "NV4", "NV4"]
    assert (table.cpu_affinity, table.numa) == (printed.cpu_affinity, printed.numa) == (
        ["24-31,56-63", "16-23,48-55", "8-15,40-47", "0-7,32-39"], [3, 2, 1, 0])
    assert table.nics == ["mlx5_0", "mlx5_1"] and table.nic_links == [["SYS", "SYS"], ["SYS", "PHB"], ["SYS", "SYS"], ["PHB", "SYS"]]
    shown = wirewise_json("topo", "show", "--from-file", str(TOPO / POLARIS_MARKDOWN))
    assert shown["fingerprint"] == wirewise_json("topo", "show", "--from-file", str(TOPO / POLARIS))["fingerprint"]


def test_lost_tabs_are_split_into_the_names_and_labels_they_can_only_be() -> None:
    """Issue 18: vllm issue 13855's DGX H100 lost the tabs between NIC8 and NIC9 in the header
    (`NIC8NIC9`) and between their cells in GPU4-7 (`NODENODE`, `NODEPXB`). Hand-read: GPU5's
    row is NODE NODE NODEPXB NODE NODE under NIC6..NIC11, so NIC8 NODE and NIC9 PXB."""
    parsed = parse_topo_text(fixture_text(LOST_TABS), LOST_TABS)
    assert parsed.nics == [f"NIC{i}" for i in range(12)]
    assert parsed.links[4] == ["NV18"] * 4 + ["X"] + ["NV18"] * 3
    assert parsed.nic_links[5][6:] == ["NODE", "NODE", "NODE", "PXB", "NODE", "NODE"]
    assert parsed.nic_links[4][6:] == ["PXB", "NODE", "NODE", "NODE", "NODE", "NODE"]
    assert parsed.cpu_affinity[4] == "56-111,168-223" and parsed.numa == [0] * 4 + [1] * 4


def test_a_reading_that_is_not_unambiguous_keeps_its_clear_error() -> None:
    """The same matrix with its line breaks lost (a summary of issue 13855 that flattened it
    onto one line, cut at the end) is refused with what to do. So is a label run into a number
    (the lost-tabs fixture with the tab before GPU7's CPU affinity removed): NV180-55 would read
    as NV18 + 0-55 or NV1 + 80-55, and a reader that guesses stores a wiring it was not shown."""
    proc = wirewise("topo", "show", "--from-file", str(TOPO / FLATTENED))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "line breaks were lost" in proc.stderr and "one row a line" in proc.stderr
    run_into_number = fixture_text(LOST_TABS).replace("PXB\t56-111,168-223", "PXB56-111,168-223", 1)
    with pytest.raises(UserError, match="'PXB56-111,168-223' under NIC11, not a link label"):
        parse_topo_text(run_into_number, "cut.txt")


def test_the_pcie_only_view_topo_mp_is_refused_not_stored_as_the_wiring(tmp_path, db_url) -> None:
    """Issue 29: `nvidia-smi topo -mp` of an NVLink machine shows its GPUs as PCIe-connected
    (NODE, SYS) and was stored as the node's wiring, fingerprint and all. `-mp` prints the
    matrix of PCIe paths and a legend without `-m`'s NV# entry (`-m` prints NV# on PCIe-only
    machines too: the consumer fixture). Here: the H200 SXM fixture as `-mp` shows it (each NV18
    read as the PCIe path between the two GPUs, the NV# line gone), and the consumer fixture's
    own `-mp` (its legend less NV#)."""
    sxm = fixture_text("synthetic-h200-sxm-8gpu-nvswitch.txt")
    as_mp = "\n".join(line for line in sxm.splitlines() if not line.strip().startswith("NV#"))
    as_mp = as_mp.replace("NV18", "NODE")
    consumer = fixture_text("consumer-5gpu-pcie-phb-node-sys-club3090-46.txt")
    consumer_mp = "\n".join(line for line in consumer.splitlines() if not line.strip().startswith("NV#"))
    for text in (as_mp, consumer_mp):
        with pytest.raises(UserError, match=r"nvidia-smi topo -mp`, the PCIe-only view .* save `nvidia-smi topo -m`"):
            parse_topo_text(text, "mp.txt")
        path = tmp_path / "mp.txt"
        path.write_text(text)
        proc = wirewise("topo", "save", "--from-file", str(path), "--node", "n1", "--db", db_url)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "topo -mp" in proc.stderr, proc.stderr
    assert not (tmp_path / "wirewise.db").exists()  # nothing stored: the database was not even made (db_url is that file)
    parse_topo_text(consumer, "m.txt")  # the same machine's `-m` still reads
