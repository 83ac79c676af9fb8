"""Stage "run", on this machine: a task started here now (`wirewise bench ...`), its ranks
laid out on the GPUs here, its run folder."""
