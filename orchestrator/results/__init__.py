"""The stored results as the commands read them (`wirewise results`, compare, report, doctor,
baselines, health checks): what their filters mean and what a result row holds.

    filters.py  the command line's filters checked (sizes, dates, choices) and names made
                whole (fabric and fingerprint prefixes, campaigns)
    rows.py     one row per stored result: the case's stored fields, the placement asked,
                the largest rank's peak memory

Below report/ and health/, which read results through it; above store/, which keeps the SQL
(wirewise.orchestrator.store.results: one translation of Filters into SQL for every read).
"""
