"""Stage "fleet", `wirewise fleet`: pair tests that name the slow node or link, and what they
leave for placement and the drain rules to read; each node's verdict acted on through Slurm.

    verdict.py   judge(nodes, measures, tolerance) -> Verdict: bad nodes, bad links, with their evidence (pure)
    schedule.py  next_round(nodes, measures, mode, tolerance) -> the pairs to test next (pure)
    pairs.py     run_pair_tests(store, scope, ...): the rounds as campaign tasks, the verdict stored
    standing.py  pair_standing(store, nodes, tolerance) -> what the latest pair tests say of each node and pair
    actions.py   fleet status, drain, retest, resume
    pair_findings.py  `fleet pairs`' verdict as findings, and a pair finding's repeat judged
    repeats.py        a finding's measurement again, through the executor, judged as the finding was

Fleet campaigns (one spec on every node of a partition) are campaigns: wirewise.orchestrator.campaign.each_node;
probing every node's wiring is wirewise.orchestrator.survey.
"""
