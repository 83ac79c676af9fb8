"""Everything wirewise says to and asks Slurm (sbatch goes through submitit, in the Slurm
executor): one runner for its commands (command.py), what campaigns ask about their jobs
(cluster.py), what is asked about nodes (nodes.py), the character sets and ranges of what a
job hands Slurm (values.py), gres.conf and Features= lines from a node's wiring (gres.py), and
the srun that starts one task per node inside a job (steps.py). What a job was given (its
SLURM_* variables, its GPUs by their physical index) is read by wirewise.jobenv, for both sides."""
