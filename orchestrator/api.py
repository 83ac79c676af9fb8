"""What a training script calls: `wirewise.advice(...)`, resolved here on first use.

    import wirewise
    advice = wirewise.advice(model="mistral-7b", batch_size=4, seq_len=2048)
    advice.strategy, advice.gpus, advice.row("fsdp").tokens_per_s, advice.accelerate_config
    advice.write_config("run/")        # run/accelerate.yaml (+ run/deepspeed.json)
    except wirewise.AdviceError        # a ValueError: an argument, environment or wiring to fix

The `wirewise` package is the contract (contract/), which imports nothing of the control
plane: its module `__getattr__` imports this module when a script first asks for `advice` or
`Advice`, the one edge from the contract into the orchestrator (tests/test_architecture.py
names it). Torch-free, so a script asks before it builds its Accelerator.
"""

from __future__ import annotations

from functools import wraps

from wirewise.errors import AdviceError, UserError
from wirewise.orchestrator.launch.advice import Advice, StrategyAdvice, advise_job


@wraps(advise_job)
def advice(*args, **kwargs) -> Advice:
    """advise_job for a script: every problem its caller can fix is an AdviceError (a ValueError),
    its message one line, as the CLI prints it for the same input; a misspelt keyword too."""
    import inspect

    try:
        inspect.signature(advise_job).bind(*args, **kwargs)
    except TypeError as exc:
        raise AdviceError(f"{exc}; wirewise.advice takes {', '.join(inspect.signature(advise_job).parameters)}") from None
    try:
        return advise_job(*args, **kwargs)
    except AdviceError:
        raise
    except UserError as exc:
        raise AdviceError(str(exc)) from None


__all__ = ["Advice", "AdviceError", "StrategyAdvice", "advice"]
