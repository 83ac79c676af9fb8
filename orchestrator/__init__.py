"""wirewise control plane: probe, plan, submit, record, decide, report.

Nothing here imports torch, deepspeed or transformers at import time, so the CLI
starts fast on a login node that has none of them.
"""
