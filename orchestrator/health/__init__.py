"""Health: the rules, and what they judge of a node (issue 19); `fleet drain`, `retest` and
`resume` act on the verdicts (wirewise.orchestrator.fleet).

    rules.py     the rules file (rules.yaml: the defaults), read and checked
    baseline.py  baselines per fingerprint and case: from the history, to a file and back
    judge.py     the rules over the history (pure functions of result rows)
    live.py      the rules read on the node through NVML
    findings.py  a finding, and the drain reason it gives
    node.py      what Slurm runs on a node: the health check and the prolog
    guard.py     the guardrails, and who asks
    verdicts.py  what placement keeps off: drained nodes, open findings, the GPUs they name

Every Slurm command goes through wirewise.orchestrator.slurm (slurm/nodes.py: node states;
slurm/states.py: drain, resume, reservations), every statement through the store (store/health.py).
"""
