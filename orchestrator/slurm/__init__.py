"""What wirewise says to and reads from Slurm: gres.conf lines from a node's wiring."""
