"""The command-line options `analyze` and `compare` share, defined once: the same flag means the
same thing, with the same help, in every command that takes it."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

F = TypeVar("F", bound=Callable[..., object])


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange lets NaN through (it compares false with both bounds) and, with no
    upper bound, infinity: either would switch a threshold off without a word."""

    def convert(self, value, param, ctx):  # type: ignore[no-untyped-def]
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number

rules_option = click.option("--rules", "rule_dirs", multiple=True, type=click.Path(path_type=Path),
                            help="Extra folder of rules (YAML + SQL); may repeat.")
set_option = click.option("--set", "sets", multiple=True, metavar="[ID.]NAME=VALUE",
                          help="Override a rule parameter (ID.PARAM=VALUE) or one of the analysis's settings "
                               "(NAME=VALUE: `explain settings`); may repeat.")
no_cache_option = click.option("--no-cache", is_flag=True,
                               help="Do not read or write the ingest cache (nor a batch's result cache).")
cache_dir_option = click.option("--cache-dir", type=click.Path(path_type=Path),
                                help="Cache folder (default ~/.cache/nsys-diagnose).")
reader_option = click.option("--reader", type=click.Choice(["auto", "scanner", "sqlite3"]), default="auto",
                             show_default=True,
                             help="How to read the export: DuckDB's sqlite extension, or Python's sqlite3.")


def rule_options(f: F) -> F:
    """--rules and --set: which rules, with which parameters and settings."""
    return rules_option(set_option(f))


def input_options(f: F) -> F:
    """--no-cache, --cache-dir and --reader: how an export is read and whether it is cached."""
    return no_cache_option(cache_dir_option(reader_option(f)))
