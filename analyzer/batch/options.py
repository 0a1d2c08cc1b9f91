"""The batch's command-line options, kept here so cli.py changes by one decorator. Importing
this module is cheap: the batch machinery (pyarrow, rich, a process pool) loads only for a batch."""

from __future__ import annotations

import os

import click


def is_batch(paths) -> bool:
    """One path that is not a folder or a pattern keeps the single-report behaviour exactly."""
    if len(paths) != 1:
        return True
    p = str(paths[0])
    return os.path.isdir(p) or (any(c in p for c in "*?[") and not os.path.exists(p))


def batch_options(f):
    f = click.option("--scheduler", metavar="ADDRESS",
                     help="Batch: Dask scheduler address (tcp://host:8786) or scheduler file, for --executor dask.")(f)
    f = click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True,
                     help="Batch: worker processes on this machine, or a Dask distributed cluster.")(f)
    f = click.option("-j", "--jobs", "workers", type=click.IntRange(min=1), metavar="N",
                     help="Batch: parallel worker processes (default: all cores; 1 runs in this process).")(f)
    return f


def run_batch(paths, **options) -> int:
    from nsys_diagnose.batch.command import run_batch as run
    return run(paths, **options)
