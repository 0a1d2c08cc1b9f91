"""Rule parameters: `--set ID.PARAM=VALUE` parsed and every value checked against its declared
type and range, so that no value a rule cannot mean reaches its SQL.

A NaN compares false with everything and an infinity or a negative duration passes every
threshold: each would silently switch a rule off. The range is the one a parameter declares
(`min`, `max` in its YAML), else the one its unit implies: a share in % lies in 0..100; a
duration, size, rate, count or ratio is not negative. Integers are whole numbers that fit
DuckDB's BIGINT.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Mapping
from typing import Any

from nsys_diagnose.engine.model import Param, Rule
from nsys_diagnose.errors import UsageError
from nsys_diagnose.ingest import settings

INT64 = (-(2**63), 2**63 - 1)
NON_NEGATIVE_UNITS = {"ns", "bytes", "bytes/s", "count", "ratio", "s", "ms", "us"}
MAX_TEXT = 10_000  # characters of a str or list parameter


def declared_range(spec: Param) -> tuple[float | None, float | None]:
    low = getattr(spec, "min", None)
    high = getattr(spec, "max", None)
    if spec.unit == "%":
        low = 0 if low is None else low
        high = 100 if high is None else high
    elif spec.unit in NON_NEGATIVE_UNITS and low is None:
        low = 0
    return low, high


def _number(raw: str, typ: str) -> int | float:
    text = raw.strip()
    if typ == "int":
        try:
            value = decimal.Decimal(text)
        except decimal.InvalidOperation:
            raise ValueError("not a number") from None
        if not value.is_finite():
            raise ValueError("not a whole number")
        if value.adjusted() > 18:  # before int(): 1e10000000 would build a ten-million-digit int
            raise ValueError("outside the 64-bit integer range")
        if value != value.to_integral_value():
            raise ValueError("not a whole number")
        number = int(value)
        if not INT64[0] <= number <= INT64[1]:
            raise ValueError("outside the 64-bit integer range")
        return number
    real = float(text)  # ValueError for words
    if not math.isfinite(real):
        raise ValueError("not a finite number")
    return real


def _in_range(value: int | float, spec: Param) -> None:
    low, high = declared_range(spec)
    unit = "" if spec.unit in ("-", "") else f" {spec.unit}"
    if low is not None and value < low:
        raise ValueError(f"below the smallest allowed value {low:g}{unit}")
    if high is not None and value > high:
        raise ValueError(f"above the largest allowed value {high:g}{unit}")


def convert(raw: str, spec: Param | str, context: str) -> Any:
    """The typed value of `raw` for a parameter; UsageError naming `context` when it is not one.
    (`spec` may be a bare type name, for callers without a parameter declaration.)"""
    typ = spec if isinstance(spec, str) else spec.type
    try:
        if typ == "bool":
            if raw.strip().lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError("expected true or false")
            return raw.strip().lower() in ("true", "1", "yes")
        if len(raw) > MAX_TEXT:
            raise ValueError(f"longer than {MAX_TEXT:,} characters")
        if typ == "list":
            return [s.strip() for s in raw.split(",") if s.strip()]
        if typ == "str":
            return raw
        if typ not in ("int", "float"):
            raise ValueError(f"unknown parameter type {typ}")
        value = _number(raw, typ)
        if not isinstance(spec, str):
            _in_range(value, spec)
        return value
    except ValueError as e:
        why = str(e) if str(e) and not str(e).startswith(("could not convert", "invalid literal")) else ""
        shown = raw if len(raw) <= 60 else raw[:57] + "..."
        raise UsageError(f"--set {context[:120]!r}: {shown!r} is not a valid {typ}" + (f" ({why})" if why else "")) from None


def typed(value: Any, spec: Param, context: str) -> Any:
    """A value given already typed (TOML, Python) or as text, checked as --set checks it."""
    if isinstance(value, str) and spec.type != "str":
        return convert(value, spec, context)
    probe = spec.model_copy(update={"default": list(value) if isinstance(value, tuple) else value})
    if problem := check_default(probe):  # the same type and range checks as a rule's default
        raise UsageError(f"{context}: {problem.removeprefix('default ').replace(' is not a ', ' is not a valid ')}")
    return float(value) if spec.type == "float" else list(value) if spec.type == "list" else value


def check_default(spec: Param) -> str | None:
    """Why a declared default does not fit its own type and range, else None."""
    value = spec.default
    if spec.type == "int":
        ok = isinstance(value, int) and not isinstance(value, bool) and INT64[0] <= value <= INT64[1]
    elif spec.type == "float":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    elif spec.type == "bool":
        ok = isinstance(value, bool)
    elif spec.type == "str":
        ok = isinstance(value, str)
    else:
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    if not ok:
        return f"default {value!r} is not a {spec.type}"
    if spec.type in ("int", "float"):
        try:
            _in_range(value, spec)
        except ValueError as e:
            return f"default {value!r} is {e}"
    return None


def is_setting(pair: str) -> bool:
    """A --set of a setting (NAME=VALUE) rather than of a rule parameter (ID.PARAM=VALUE)."""
    return "." not in pair.partition("=")[0]


def parse_overrides(pairs: list[str] | tuple[str, ...], rules: dict[str, Rule]) -> dict[str, dict[str, Any]]:
    """`ID.PARAM=VALUE` strings -> {rule id: {param: typed value}}; unknown names are usage errors."""
    out: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key, eq, raw = pair.partition("=")
        rule_id, dot, param = key.partition(".")
        shown = pair if len(pair) <= 120 else pair[:117] + "..."
        if not eq or not dot:
            raise UsageError(f"--set {shown!r}: expected ID.PARAM=VALUE")
        spec = declared(rules, rule_id, param, f"--set {shown!r}")
        out.setdefault(rule_id, {})[param] = convert(raw, spec, pair)
    return out


def declared(rules: dict[str, Rule], rule_id: str, param: str, context: str) -> Param:
    """The spec of parameter `param` of rule `rule_id`; a usage error naming `context` if either is unknown."""
    if rule_id not in rules:
        raise UsageError(f"{context}: no rule '{rule_id}' (see `nsys-diagnose rules`)")
    spec = rules[rule_id].params.get(param)
    if spec is None:
        known = ", ".join(rules[rule_id].params) or "none"
        raise UsageError(f"{context}: rule '{rule_id}' has no parameter '{param}' (has: {known})")
    return spec


# The analysis's settings (ingest/sql/settings.sql) are set as rule parameters are, by name
# without a rule id (--set NAME=VALUE, [tool.nsys-diagnose.settings], the API's settings=), and
# checked the same way, from their declared type, unit and range.

def setting_spec(name: str, context: str) -> Param:
    """The setting `name` declared as a rule parameter is, for the same checks; a usage error
    naming `context` when there is no such setting."""
    row = settings.declared().get(name)
    if row is None:
        raise UsageError(f"{context}: no setting '{name[:60]}' (`nsys-diagnose explain settings` lists them; "
                         "a rule's parameter is RULE.PARAM)")
    return Param(type=row["type"], default=settings.default(name), unit=row["unit"], why=row["why"],
                 min=row["min"], max=row["max"])


def parse_settings(pairs: list[str] | tuple[str, ...]) -> dict[str, int | float]:
    """`NAME=VALUE` strings (--set without a rule id) -> {setting: typed value}."""
    out: dict[str, int | float] = {}
    for pair in pairs:
        name, eq, raw = pair.partition("=")
        shown = pair if len(pair) <= 120 else pair[:117] + "..."
        if not eq:
            raise UsageError(f"--set {shown!r}: expected ID.PARAM=VALUE (a rule parameter) or NAME=VALUE (a setting)")
        out[name.strip()] = convert(raw, setting_spec(name.strip(), f"--set {shown!r}"), pair)
    return out


def parse_sets(pairs: list[str] | tuple[str, ...], rules: dict[str, Rule]
               ) -> tuple[dict[str, dict[str, Any]], dict[str, int | float]]:
    """--set's strings -> (rule parameter overrides, settings): `ID.PARAM=VALUE` and `NAME=VALUE`."""
    return (parse_overrides([p for p in pairs if not is_setting(p)], rules),
            parse_settings([p for p in pairs if is_setting(p)]))


def checked_settings(values: Mapping[str, Any] | None, origin: str = "settings") -> dict[str, int | float]:
    """Settings given typed (TOML, Python) or as text, each checked as --set checks it; a usage
    error naming `origin` and the setting at the first that is not valid."""
    out: dict[str, int | float] = {}
    for name, value in (values or {}).items():
        context = f"{origin} {str(name)[:60]!r}"
        spec = setting_spec(str(name), context)
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise UsageError(f"{context}: {type(value).__name__} is not a valid {spec.type}")
        out[str(name)] = typed(value, spec, context)
    return out
