"""Campaigns: one YAML spec -> every measurement of a grid, on Slurm or here.

    spec.py       the spec (pydantic; errors name the field path)
    plan.py       spec x a node's wiring -> tasks on exact GPUs, and what was skipped and why
    submit.py     tasks -> bundles -> arrays, with the job each element asks for
    each_node.py  target.scope each-node: every node of a partition, planned per wiring, pinned per node
    bundle.py     what an array element runs on the compute node
    folder.py     the campaign folder both sides read and write
    track.py      status, collect, resume
    lifecycle.py  the flows the CLI calls: plan, submit, resume, cancel, forget

Where the elements run is the executor's (wirewise.orchestrator.executor: local, slurm, ...).
"""
