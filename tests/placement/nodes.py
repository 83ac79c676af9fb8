"""Random GPU nodes for property tests, built the way real boxes are: sockets (NUMA nodes)
holding PCIe switches holding GPUs, some GPUs bonded into NVLink cliques under one switch."""

from __future__ import annotations

from hypothesis import strategies as st

from wirewise.topology import Topology

GPU_MODELS = ("NVIDIA H200", "NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-32GB", None)


@st.composite
def hierarchical_nodes(draw, gpus: int) -> Topology:
    model = draw(st.sampled_from(GPU_MODELS))
    socket = [draw(st.integers(0, 1)) for _ in range(gpus)]
    switch = [socket[g] * 4 + draw(st.integers(0, 2)) for g in range(gpus)]
    # NVLink cliques: consecutive GPUs of one switch, each clique with its own bond width.
    group, width, next_group = [0] * gpus, {}, 0
    for g in range(gpus):
        joins = g > 0 and switch[g - 1] == switch[g] and draw(st.booleans())
        if not joins:
            next_group += 1
            width[next_group] = draw(st.sampled_from([0, 2, 4, 6, 12, 18]))
        group[g] = next_group

    def label(i: int, j: int) -> str:
        if i == j:
            return "X"
        if group[i] == group[j] and width[group[i]]:
            return f"NV{width[group[i]]}"
        if switch[i] == switch[j]:
            return "PIX"
        return "NODE" if socket[i] == socket[j] else "SYS"

    links = [[label(i, j) for j in range(gpus)] for i in range(gpus)]
    return Topology(links=links, gpu_names=[model] * gpus, numa=socket)


@st.composite
def any_nodes(draw, max_gpus: int) -> Topology:
    """Any labelling at all, mesh-like NVLink included (DGX-1 style partial wirings)."""
    n = draw(st.integers(2, max_gpus))
    choice = st.sampled_from(["NV1", "NV2", "NV4", "NV6", "PIX", "PXB", "PHB", "NODE", "SYS"])
    links = [["X"] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            links[i][j] = links[j][i] = draw(choice)
    numa = [draw(st.integers(0, 1)) for _ in range(n)]
    return Topology(links=links, gpu_names=[draw(st.sampled_from(GPU_MODELS))] * n, numa=numa)
