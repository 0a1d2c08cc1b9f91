"""Batch mode: many exports in one command, locally in worker processes or on a Dask cluster.

discover.py finds the inputs, work.py analyzes one (in a worker), run.py schedules the work,
cache.py remembers finished results, ranks.py groups the ranks of one job, summary.py writes
summary.md and the Parquet datasets, command.py ties them together for the CLI.
"""
