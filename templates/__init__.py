"""Config templates (data only): DeepSpeed ZeRO configs and accelerate launcher configs.

A package only so that an installed wirewise carries these files next to `jobs`;
`wirewise.jobs.train.configs` renders them.
"""
