"""The `compare` command: options, exit codes (0; 1 on a gated regression; 2 bad input)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from nsys_diagnose.cli_options import FiniteFloatRange, input_options, rule_options
from nsys_diagnose.compare.comparison import compare
from nsys_diagnose.compare.render import FORMATS
from nsys_diagnose.compare.verdict import Settings
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.engine.params import parse_sets
from nsys_diagnose.ingest import nsysrep
from nsys_diagnose.ingest.database import check_input
from nsys_diagnose.output import output_file, publish, say
from nsys_diagnose.report import terminal


@click.command("compare", short_help="Compare two exports of one program, before and after a change: "
                                    "a noise-aware verdict and what moved.")
@click.argument("before", type=click.Path(path_type=Path))
@click.argument("after", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["md", "json", "junit"]), default="md", show_default=True)
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write the comparison here (atomically; - for stdout).")
@click.option("--fail-on-regression", "fail_pct", type=FiniteFloatRange(min=0), metavar="PCT",
              help="Exit 1 when the mean step time regressed significantly by more than PCT %.")
@click.option("--fail-on-inconclusive", is_flag=True,
              help="Also exit 1 when the verdict is not-comparable or inconclusive.")
@click.option("--min-effect", "min_effect", type=FiniteFloatRange(min=0), default=1.0, show_default=True,
              metavar="PCT", help="Smallest change of the mean step time called a change, in %.")
@click.option("--alpha", type=FiniteFloatRange(min=0, max=1, min_open=True, max_open=True), default=0.05,
              show_default=True, help="Significance level of the rank test of each item's per-step times "
                                      "(kernels, APIs, copies, ranges).")
@click.option("--confidence", type=FiniteFloatRange(min=0, max=1, min_open=True, max_open=True), default=0.95,
              show_default=True, help="Level of the bootstrap interval.")
@click.option("--min-steps", type=click.IntRange(min=2), default=5, show_default=True,
              help="Fewest timed steps per run for a verdict (fewer: inconclusive).")
@click.option("--large-effect", "large_effect", type=click.FloatRange(min=0), default=5.0, show_default=True,
              metavar="PCT", help="A change of the mean step time this large whose interval holds 0 is "
                                  "inconclusive, not no-change, in %.")
@click.option("--assume-comparable", is_flag=True,
              help="Compare even when the preflight says the runs are not comparable.")
@rule_options
@input_options
def compare_command(before: Path, after: Path, fmt: str, output: Path | None, fail_pct: float | None,
                    fail_on_inconclusive: bool, min_effect: float, alpha: float, confidence: float,
                    min_steps: int, large_effect: float, assume_comparable: bool, rule_dirs, sets, no_cache: bool,
                    cache_dir: Path | None, reader: str) -> None:
    """Compare two exports of one program, BEFORE and AFTER a change: improved, regressed,
    no-change, not-comparable or inconclusive, with the effect size, its uncertainty and what
    moved it."""
    for path in (before, after):  # a wrong path fails fast, before the rules are loaded
        if not nsysrep.is_report(path):  # a .nsys-rep is exported first, then checked
            check_input(path)
    target = output_file(output, [before, after])  # None: stdout
    rules = load_rules(rule_dirs)
    overrides, analysis_settings = parse_sets(sets, rules)
    settings = Settings(min_effect_pct=min_effect, alpha=alpha, confidence=confidence, min_steps=min_steps,
                        assume_comparable=assume_comparable, large_effect_pct=large_effect)
    result = compare(before, after, settings=settings, rules=rules, overrides=overrides,
                     use_cache=not no_cache, cache_dir=cache_dir, reader=reader, analysis_settings=analysis_settings)
    text = FORMATS[fmt](result, fail_pct)
    if target is not None:
        publish(target, text, say)
    elif fmt == "md" and terminal.wanted(sys.stdout):  # rendered and cut to a screen, as analyze does
        terminal.show(text, full_report=terminal.full_report_command("compare.md"))
    else:
        click.echo(text, nl=False)
    failed = fail_pct is not None and result.regression_beyond(fail_pct)
    undecided = fail_on_inconclusive and result.verdict in ("not-comparable", "inconclusive")
    sys.exit(1 if failed or undecided else 0)
