"""A project's defaults: the `[tool.nsys-diagnose]` table of the nearest pyproject.toml that has
one, from the current folder up (as ruff and sqlfluff find theirs). Command-line flags win:

    [tool.nsys-diagnose]
    select = ["gpu", "launch-bound-loop"]    # rule ids or categories
    ignore = ["memory-headroom"]
    fail-on = "warning"
    rules = ["perf-rules"]                   # extra rule folders, relative to this file
    [tool.nsys-diagnose.params]
    "gpu-idle-gaps.min_gap_ns" = 500_000
    [tool.nsys-diagnose.severity]
    hot-kernels = "warning"
    [tool.nsys-diagnose.settings]              # the analysis's settings: `nsys-diagnose explain settings`
    gpu_bound_pct = 75
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from nsys_diagnose.errors import UsageError
from nsys_diagnose.files import read_regular
from pydantic import BaseModel, ConfigDict, Field, ValidationError

TABLE = "nsys-diagnose"
# Exit 1 when a warning fires, as ruff and sqlfluff exit 1 on any finding they report: notes (info)
# describe the run and never fail it. No built-in rule has severity error, so "error" never fired.
DEFAULT_FAIL_ON = "warning"


class ProjectConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    select: list[str] = []
    ignore: list[str] = []
    params: dict[str, Any] = {}
    severity: dict[str, str] = {}
    settings: dict[str, Any] = {}
    fail_on: Literal["info", "warning", "error", "never"] | None = Field(None, alias="fail-on")
    rules: list[str] = Field(default_factory=list, description="rule folders, relative to the pyproject.toml")
    path: Path | None = Field(None, exclude=True)  # the file it came from; None: no config

    @property
    def origin(self) -> str:
        return f"{self.path} [tool.{TABLE}]"

    def rule_dirs(self) -> list[Path]:
        base = self.path.parent if self.path else Path.cwd()
        return [base / d for d in self.rules]


def find(start: Path | None = None) -> Path | None:
    """The nearest pyproject.toml with a [tool.nsys-diagnose] table, from `start` (the current
    folder) up; files without the table are passed over."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file() and TABLE in _read(candidate).get("tool", {}):
            return candidate
    return None


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(read_regular(path, 1 << 20).decode("utf-8"))  # a pipe would block: files.py
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}: is not UTF-8 text (byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: invalid TOML: {e}") from None
    except RecursionError:  # tomllib recurses once per level of nested arrays or inline tables
        raise UsageError(f"{path}: invalid TOML: nested too deep") from None
    except ValueError as e:  # an integer of more digits than Python converts (4,300)
        raise UsageError(f"{path}: invalid TOML: {str(e).split(':')[0]}") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot be read ({e.strerror or e})") from None


def load(start: Path | None = None) -> ProjectConfig:
    """The project's config, or an empty one when no pyproject.toml above has the table."""
    path = find(start)
    if path is None:
        return ProjectConfig()
    table = _read(path)["tool"][TABLE]
    if not isinstance(table, dict):
        raise UsageError(f"{path}: [tool.{TABLE}] must be a table")
    if "path" in table:
        raise UsageError(f"{path}: [tool.{TABLE}] path: unknown key")
    try:
        return ProjectConfig(**table, path=path)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        what = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        raise UsageError(f"{path}: [tool.{TABLE}] {where}: {what}") from None


class RunOptions(BaseModel):
    """What one analysis runs with, config and flags merged."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    rules: dict[str, Any]
    overrides: dict[str, dict[str, Any]]
    select: list[str] | None
    fail_on: str
    settings: dict[str, int | float] = {}  # the analysis's settings changed, by name (checked)


def run_options(cfg: ProjectConfig, *, rule_dirs=(), sets=(), select=(), ignore=(), severities=(),
                fail_on: str | None = None, check_rules: bool = True) -> RunOptions:
    """Merge the project's config with the command line: --select, --ignore and --fail-on replace
    the config's value; --set and --severity win per parameter, setting and rule; --rules folders
    come after the config's (a rule of the same id replaces the earlier one). `--set NAME=VALUE`
    (no rule id) sets one of the analysis's settings. check_rules=False: the rules' check_rule
    is left to the caller (load_rules' check)."""
    from nsys_diagnose.engine.catalog import load_rules
    from nsys_diagnose.engine.params import checked_settings, parse_sets
    from nsys_diagnose.engine.selection import (
        merge_overrides,
        overrides_from,
        parse_severities,
        resolve,
        with_severities,
    )

    rules = load_rules([*cfg.rule_dirs(), *rule_dirs], check=check_rules)
    set_overrides, set_settings = parse_sets(sets, rules)
    overrides = merge_overrides(overrides_from(cfg.params, rules, origin=f"{cfg.origin} params"), set_overrides)
    settings = checked_settings(cfg.settings, origin=f"{cfg.origin} settings") | set_settings
    chosen = resolve(rules, select or cfg.select, ignore or cfg.ignore,
                     origin="--select" if select else f"{cfg.origin} select",
                     ignore_origin="--ignore" if ignore else f"{cfg.origin} ignore")
    rules = with_severities(rules, cfg.severity, origin=f"{cfg.origin} severity")
    rules = with_severities(rules, parse_severities(severities))
    return RunOptions(rules=rules, overrides=overrides, select=chosen, fail_on=fail_on or cfg.fail_on or DEFAULT_FAIL_ON,
                      settings=settings)
