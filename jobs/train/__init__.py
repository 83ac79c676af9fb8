"""The training workload: one loop (loop.py) over models (models.py), data (data.py) and the code
of each strategy (strategies/). `wirewise.registry.WORKLOADS["train"]` points at `loop.run_rank`.

Importing this package imports nothing heavy, and models.py stays torch-free at import; what a
run asks for (`wirewise.workloads.train.TrainParams`) and what each strategy is
(`wirewise.registry.STRATEGIES`) live in the contract, so the control plane validates a run
without torch.
"""
