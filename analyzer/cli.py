"""Command line: `nsys-diagnose REPORT.sqlite` analyzes; `rules` lists; `explain ID` documents.

Exit codes: 0 no finding at or above --fail-on (default: warning); 1 one is; 2 usage or input
error (the bare command, which prints the help, included); 130 Ctrl-C.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
from pathlib import Path

import click
from nsys_diagnose import __version__
from nsys_diagnose.analyze import analyze
from nsys_diagnose.batch.options import batch_options, is_batch, run_batch
from nsys_diagnose.cli_options import input_options, rule_options, rules_option
from nsys_diagnose.config import ProjectConfig, run_options
from nsys_diagnose.config import load as load_config
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.engine.model import SEVERITY_RANK, Report, Rule
from nsys_diagnose.errors import DiagnoseError, UsageError, is_interrupted
from nsys_diagnose.ingest import progress
from nsys_diagnose.output import output_file, publish, say, write_atomic
from nsys_diagnose.report import terminal
from nsys_diagnose.report.formats import CI_FORMATS, FORMATS, NEEDS_TIMELINE, TABLE_FORMATS
from nsys_diagnose.report.formats import render as render_format
from nsys_diagnose.text import printable

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _compare_command() -> click.Command:
    from nsys_diagnose.compare.command import compare_command

    return compare_command


# Commands imported when they are named (or the help lists them): `compare` and what it
# imports cost every plain analysis ~20 ms of start-up (docs/benchmarks.md, session 15).
LAZY_COMMANDS = {"compare": _compare_command}


class DefaultGroup(click.Group):
    """A group whose first argument, when it is not a command, is a path for `analyze`. Its help
    is analyze's too: `nsys-diagnose --help` lists the options people run it with (-o, --format,
    --select), and each command's summary whole."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in LAZY_COMMANDS:
            self.add_command(LAZY_COMMANDS[name](), name)
        return super().get_command(ctx, name)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args:  # the bare command: the help, as it prints for --help; 2, since nothing ran
            click.echo(ctx.get_help())
            sys.exit(2)
        if args and args[0] not in self.list_commands(ctx) and args[0] not in ("-h", "--help", "--version"):
            self._refuse_mistyped_command(args[0], self.list_commands(ctx))
            args = ["analyze", *args]
        return super().parse_args(ctx, args)

    def _refuse_mistyped_command(self, word: str, commands: list[str]) -> None:
        """`nsys-diagnose explian x` is a typo, not an export named 'explian': a word that names
        no file, has no path characters and is close to a command's name."""
        if os.path.lexists(word) or any(c in word for c in "/\\.*?[") or word.startswith("-"):
            return
        close = difflib.get_close_matches(word, commands, 1, 0.6)
        if close:
            raise UsageError(f"no command or file '{word}' (did you mean `nsys-diagnose {close[0]}`?)")

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_options(ctx, formatter)
        analyze = self.commands["analyze"]
        own_help = analyze.get_help_option(ctx)
        records = [r for p in analyze.get_params(ctx)
                   if isinstance(p, click.Option) and p is not own_help and (r := p.get_help_record(ctx))]
        with formatter.section("Options of analyze (nsys-diagnose REPORT.sqlite [OPTIONS])"):
            formatter.write_dl(records)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, cmd.get_short_help_str(limit=1000)) for name in self.list_commands(ctx)
                if (cmd := self.get_command(ctx, name)) is not None and not cmd.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def fail_level_reached(report: Report, fail_on: str) -> bool:
    if fail_on == "never":
        return False
    return any(SEVERITY_RANK[f.severity] >= SEVERITY_RANK[fail_on] for f in report.findings)


@click.group(cls=DefaultGroup, context_settings=CONTEXT)
@click.version_option(__version__, prog_name="nsys-diagnose")
def cli() -> None:
    """Say what holds a CUDA program back, from an Nsight Systems SQLite export.

    \b
    nsys-diagnose report.sqlite            Markdown report on the terminal
    nsys-diagnose report.sqlite --format json -o report.json
    nsys-diagnose runs/ -o out/            batch: a folder (or paths, globs), in parallel
    nsys-diagnose rules                    list the rules
    nsys-diagnose explain gpu-idle-gaps    one rule's documentation
    nsys-diagnose compare BEFORE AFTER     did a change help? noise-aware verdict and deltas
    nsys-diagnose schema report            the JSON Schema of the report (or: compare)
    nsys-diagnose test-rules my-rules/     run the scenarios beside a folder's rules (_fixtures/<id>/)

    Exit codes: 0 no finding reaches --fail-on (default: warning), 1 one does, 2 a usage or input
    error, 130 interrupted.
    """


config_option = click.option("--no-config", is_flag=True,
                             help="Ignore the [tool.nsys-diagnose] table of the nearest pyproject.toml.")


def project_config(no_config: bool) -> ProjectConfig:
    return ProjectConfig() if no_config else load_config()


@cli.command("analyze", short_help="Analyze one export, or a batch (a folder, several paths or a glob); "
                                    "the default command.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice([*sorted(FORMATS), *CI_FORMATS]), default="md", show_default=True,
              help="md, json, html; for CI: github (annotations + job summary), sarif, junit.")
@click.option("-o", "--output", type=click.Path(path_type=Path),
              help="Write the report here (atomically; - for stdout); for a batch, the output folder.")
@rule_options
@click.option("--select", multiple=True, metavar="ID|CATEGORY", help="Run only these rules or categories; may repeat.")
@click.option("--ignore", multiple=True, metavar="ID|CATEGORY", help="Do not run these rules or categories; may repeat.")
@click.option("--severity", "severities", multiple=True, metavar="ID=LEVEL",
              help="Give every finding of a rule (or category) this severity: info, warning, error; may repeat.")
@click.option("--fail-on", type=click.Choice(["info", "warning", "error", "never"]),
              help="Exit 1 when a finding reaches this severity.  [default: warning]")
@input_options
@click.option("--tables-dir", type=click.Path(path_type=Path), metavar="DIR",
              help="Also write every rule's full result rows here, one file per rule.")
@click.option("--tables-format", type=click.Choice(TABLE_FORMATS), default="csv", show_default=True,
              help="File format of --tables-dir.")
@click.option("-v", "--verbose", is_flag=True,
              help="Markdown: also list every rule's status and show the tables of the rules that passed.")
@config_option
@batch_options
def analyze_cmd(paths: tuple[Path, ...], fmt: str, output: Path | None, rule_dirs, sets, select, ignore, severities,
                fail_on: str | None, no_cache: bool, cache_dir: Path | None, reader: str, tables_dir: Path | None,
                tables_format: str, verbose: bool, no_config: bool, **batch) -> None:
    """Analyze one export (.sqlite from `nsys export --type sqlite`), or a batch: a folder, several
    paths or a glob; a batch writes <name>.json + <name>.md per input and summary.md,
    reports.parquet and findings.parquet into -o DIR (default ./nsys-diagnose-out).

    Defaults come from the [tool.nsys-diagnose] table of the nearest pyproject.toml (select,
    ignore, params, severity, fail-on, rules); flags given here win."""
    many = is_batch(paths)
    # one export's rules are checked by analyze(), and not at all when its report cache answers
    opts = run_options(project_config(no_config), rule_dirs=rule_dirs, sets=sets, select=select, ignore=ignore,
                       severities=severities, fail_on=fail_on, check_rules=many or bool(tables_dir))
    rules, overrides, chosen, settings = opts.rules, opts.overrides, opts.select, opts.settings
    if many:
        if tables_dir:
            raise UsageError("--tables-dir: works on one export (a batch writes findings.parquet instead)")
        if fmt in CI_FORMATS:
            raise UsageError(f"--format {fmt}: works on one export (a batch writes md, json or html per input)")
        sys.exit(run_batch(paths, output=output, fmt=fmt, rules=rules, overrides=overrides, select=chosen,
                           fail_on=opts.fail_on, use_cache=not no_cache, cache_dir=cache_dir, reader=reader,
                           settings=settings, **batch))
    path = paths[0]
    target = output_file(output, [path])  # None: stdout
    if fmt == "html" and output is None and sys.stdout.isatty():  # before the analysis: it is refused either way
        raise UsageError("--format html writes a web page, not text for a terminal: give -o report.html "
                         "(or -o - to write it to stdout anyway)")
    with progress.shown(sys.stderr):  # stage and rows on a terminal while a long run works
        if tables_dir:
            report = analyze_with_tables(path, rules, overrides, chosen, tables_dir, tables_format,
                                         use_cache=not no_cache, cache_dir=cache_dir, reader=reader,
                                         timeline=fmt in NEEDS_TIMELINE, settings=settings)
        else:
            report = analyze(path, rules=rules, overrides=overrides, select=chosen,
                             use_cache=not no_cache, cache_dir=cache_dir, reader=reader,
                             timeline=fmt in NEEDS_TIMELINE, settings=settings, unchecked=True)
    text = render_format(fmt, report, rules=rules, fail_on=opts.fail_on, verbose=verbose)
    if target is not None:
        publish(target, text, say)
    elif fmt == "md" and terminal.wanted(sys.stdout):
        terminal.show(text, full_report=terminal.full_report_command())
    else:
        click.echo(text, nl=False)
    if fmt == "github":
        from nsys_diagnose.report import github

        github.write_step_summary(report)
    sys.exit(1 if fail_level_reached(report, opts.fail_on) else 0)


def analyze_with_tables(path: Path, rules, overrides, select, folder: Path, fmt: str, **options) -> Report:
    """The report and, from the same open trace, every rule's full rows under `folder`."""
    from nsys_diagnose.api import Trace
    from nsys_diagnose.report.tables import write_tables

    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder}: --tables-dir must be a folder, and this is a file")
    timeline = options.pop("timeline")
    with Trace(path, **options) as trace:
        report = trace._report(rules, overrides, select, timeline=timeline)
        write_tables(trace.con, report, rules, overrides, folder, fmt)
    return report


@cli.command("rules", short_help="List the rules: id, severity, category and summary.")
@rules_option
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True,
              help="text: one line per rule; json: every rule's fields, parameters and documentation; "
                   "markdown: the table of the README.")
@config_option
def rules_cmd(rule_dirs, fmt: str, no_config: bool) -> None:
    """List the rules: id, severity, category and summary."""
    cfg = project_config(no_config)
    rules = sorted(load_rules([*cfg.rule_dirs(), *rule_dirs]).values(), key=lambda r: (r.category, r.id))
    if fmt == "json":
        click.echo(json.dumps([rule_entry(r) for r in rules], indent=2, ensure_ascii=False))
        return
    if fmt == "markdown":
        click.echo(rules_table(rules), nl=False)
        return
    for rule in rules:
        click.echo(f"{rule.id:<28} {rule.severity:<8} {rule.category:<10} {rule.summary}")


def rules_table(rules: list[Rule]) -> str:
    """The README's rule table: one row per rule, from its YAML (a test keeps the README equal)."""
    def cell(text: str) -> str:
        return " ".join(text.split()).replace("|", "\\|")
    rows = [f"| `{r.id}` | {r.category} | {r.severity} | {cell(r.summary)}"
            f"{' (preview)' if r.status == 'preview' else ''} |" for r in rules]
    return "\n".join(["| id | category | severity | what it reports |", "|---|---|---|---|", *rows]) + "\n"


def rule_entry(rule: Rule) -> dict:
    """A rule as `rules --format json` lists it: what a tool needs to show or configure it."""
    return {"id": rule.id, "title": rule.title, "category": rule.category, "severity": rule.severity,
            "status": rule.status, "summary": rule.summary, "docs": rule.docs.model_dump(mode="json"),
            "requires": rule.requires, "requires_any": rule.requires_any,
            "params": {n: p.model_dump(mode="json") for n, p in rule.params.items()},
            "columns": rule.columns, "source": rule.source}


@cli.command("explain", short_help="Print one rule's documentation: what, why, fix, parameters, columns.")
@click.argument("rule_id")
@rules_option
@config_option
def explain_cmd(rule_id: str, rule_dirs, no_config: bool) -> None:
    """Print one rule's documentation: what, why, fix, parameters, output columns.
    `explain settings` prints the analysis's settings instead: the tunables that are not a rule's
    parameter (ingest/sql/settings.sql)."""
    if rule_id == "settings":
        from nsys_diagnose.engine.params import checked_settings

        cfg = project_config(no_config)
        click.echo(settings_text(checked_settings(cfg.settings, origin=f"{cfg.origin} settings"), cfg.origin))
        return
    rules = load_rules([*project_config(no_config).rule_dirs(), *rule_dirs])
    if rule_id not in rules:
        raise UsageError(f"no rule '{rule_id}' (see `nsys-diagnose rules`)")
    r = rules[rule_id]
    lines = [f"{r.id}: {r.title}", f"category {r.category} · severity {r.severity} · {r.status}", "",
             r.summary, "", "What it detects:", "  " + r.docs.what.strip(), "", "Why it matters:",
             "  " + r.docs.why.strip(), "", "How to fix:", "  " + r.docs.fix.strip()]
    needs = r.requires + ([" or ".join(r.requires_any)] if r.requires_any else [])
    lines += ["", "Requires: " + (", ".join(needs) or "nothing")]
    if r.params:
        lines += ["", "Parameters (override with --set " + r.id + ".NAME=VALUE):"]
        for name, p in r.params.items():
            lines.append(f"  {name} = {p.default!r} {p.unit} ({p.type}): {p.why.strip()}")
    if r.columns:
        lines += ["", "Result columns:"] + [f"  {c}: {d}" for c, d in r.columns.items()]
    if r.docs.references:
        lines += ["", "References:"] + [f"  {u}" for u in r.docs.references]
    click.echo("\n".join(lines))


def settings_text(configured: dict[str, int | float] | None = None, origin: str = "") -> str:
    """The settings as `explain settings` prints them: value, unit, type, range, reader and why;
    a value the project's config (`origin`) sets is shown with the default it replaces."""
    from nsys_diagnose.ingest import settings

    def num(x: float) -> str:
        return f"{x:,.0f}" if x == int(x) else f"{x:g}"
    changed = settings.changes(configured)
    lines = ["Settings: the analysis's tunables that are not a rule's parameter, declared in",
             "analyzer/ingest/sql/settings.sql. Change one for a run with --set NAME=VALUE, or for a project",
             "in its pyproject.toml's [tool.nsys-diagnose.settings] table.", ""]
    for name, s in settings.declared().items():
        bounds = f"{num(s['min'])} to {num(s['max'])}" if s["max"] is not None else f"at least {num(s['min'])}"
        was = f"; default {num(settings.default(name))}, set in {origin}" if name in changed else ""
        lines += [f"  {name} = {num(settings.value(name, changed))} {s['unit']} ({s['type']}, {bounds}; "
                  f"read by {s['read_by']}{was})", f"    {s['why']}"]
    return "\n".join(lines)


@cli.command("schema", short_help="Print the JSON Schema of the report or of the compare result.")
@click.argument("name", required=False, type=click.Choice(["report", "compare"]))
@click.option("--write", is_flag=True, help="Regenerate the schema files of a source checkout "
              "(analyzer/schemas/ and docs/schemas/) from the models.")
@click.option("--check", is_flag=True, help="Exit 1 when a schema file differs from the models.")
def schema_cmd(name: str | None, write: bool, check: bool) -> None:
    """Print the JSON Schema of the report (`--format json`) or of the compare result, as
    generated from the models; --write regenerates the shipped files, --check verifies them."""
    from nsys_diagnose import contracts

    names = [name] if name else list(contracts.NAMES)
    if write:
        for n in names:
            for path in contracts.source_copies(n):
                write_atomic(path, contracts.text(n))
                click.echo(f"wrote {path}", err=True)
    elif check:
        stale = contracts.stale(names)
        for stale_path in stale:
            click.echo(f"{stale_path}: differs from the model; regenerate with `python -m nsys_diagnose schema --write`",
                       err=True)
        sys.exit(1 if stale else 0)
    elif name is None:
        raise UsageError("schema: name one of report, compare (or give --write or --check)")
    else:
        click.echo(contracts.text(name), nl=False)


@cli.command("test-rules", short_help="Run the scenarios of a folder of rules, like `semgrep test`.")
@click.argument("rules_dir", type=click.Path(path_type=Path))
@click.option("--select", multiple=True, metavar="ID", help="Test only these rules; may repeat.")
@click.option("--update-snapshots", is_flag=True,
              help="Rewrite each scenario's snapshot (<scenario>.snap) from its run instead of comparing.")
def test_rules_cmd(rules_dir: Path, select: tuple[str, ...], update_snapshots: bool) -> None:
    """Run the scenarios of a folder of rules (as --rules takes it), like `semgrep test`: each
    rule's scenarios are beside it, in _fixtures/<id>/; each scenario's export goes through the
    whole pipeline, and its rule's result is checked against what it expects and against its
    snapshot (the findings as the report renders them).

    Exit 0 when every scenario passes, 1 when one fails, 2 when a rule or scenario is invalid
    (an unknown key, a parameter the rule lacks, a quiet-* scenario expecting `fired`, ...).
    Scenario format: rules/README.md of the source repository."""
    from nsys_diagnose import rule_tests

    rules = load_rules([rules_dir])
    root = rules_dir.resolve()
    tested = [r.id for r in rules.values() if Path(r.source).resolve().is_relative_to(root)]
    if not tested:
        raise UsageError(f"{rules_dir}: holds no rules (<id>.yaml beside <id>.sql)")
    if unknown := [s for s in select if s not in tested]:
        raise UsageError(f"--select: no rule {', '.join(map(repr, unknown))} in {rules_dir}")
    cases = rule_tests.load_cases(rules_dir, rules, list(select) or tested)
    failed = 0
    for case, problems in rule_tests.run_all(cases, rules, update=update_snapshots):
        failed += bool(problems)
        click.echo(f"FAIL {case.name}: {'; '.join(map(printable, problems))}" if problems else f"ok   {case.name}")
    count = len({c.rule_id for c in cases})
    click.echo(f"{len(cases)} scenarios of {count} rule{'s' * (count != 1)}: "
               f"{len(cases) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


def fail(message: object, code: int = 2) -> None:
    """One line on stderr, whatever a file name in it holds (printable: no escape reaches the
    terminal, no newline splits the line), and the exit code."""
    click.echo(f"nsys-diagnose: {printable(message)}", err=True)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """The console entry point (argv: the arguments, default sys.argv[1:])."""
    try:
        cli.main(args=argv, standalone_mode=False)
    except click.exceptions.Abort:
        fail("interrupted", 130)
    except click.ClickException as e:
        fail(e.format_message())
    except DiagnoseError as e:
        fail(e)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except OSError as e:  # e.g. an output path that cannot be written: the file and the problem
        fail(f"{e.filename}: {e.strerror}" if e.filename else e)
    except Exception as e:  # never a traceback for users; NSYS_DIAGNOSE_DEBUG=1 shows it
        if is_interrupted(e):  # Ctrl-C during an ingest query
            fail("interrupted", 130)
        if os.environ.get("NSYS_DIAGNOSE_DEBUG"):
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        fail(f"internal error: {type(e).__name__}: {first}")
