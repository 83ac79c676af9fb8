"""`wirewise launch`: start a training script with the advice of the allocation it runs in.

    advice.py      what to run: the GPUs, the strategy, its accelerate configuration (the
                   `wirewise.advice()` a script can ask for itself)
    allocation.py  what the job was given (SLURM_*, CUDA_VISIBLE_DEVICES, the node's wiring)
    command.py     the run folder (launch.json, accelerate.yaml, deepspeed.json), the command,
                   and starting it: `accelerate launch` here, or once per node through srun
    step.py        what srun runs on each node: that node's `accelerate launch`

The job's ranks find the run folder in WIREWISE_LAUNCH_DIR and what was decided in its
launch.json (wirewise.launch_file); the history recorder (wirewise.jobs.history) stores their
figures with it.
"""
