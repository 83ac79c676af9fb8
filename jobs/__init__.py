"""Workloads that run on compute nodes: rank launch, collectives, training.

Importing this package imports nothing heavy; torch is imported by the rank
processes (wirewise.jobs.worker) and the workload modules they load.
"""
