"""The training workload: one loop (loop.py) over models (models.py), data (data.py) and a small
descriptor per strategy (strategies/). `wirewise.task.WORKLOADS["train"]` points at `loop.run_rank`.

Importing this package imports nothing heavy; params.py and models.py stay torch-free at import
so the control plane can validate a run without torch.
"""
