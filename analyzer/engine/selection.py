"""Which rules run and how: --select/--ignore by id or category, parameters given as a mapping
(the config file, the library) and per-rule severity overrides. Shared by the CLI and the API."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from nsys_diagnose.engine.model import SEVERITY_RANK, Rule
from nsys_diagnose.engine.params import declared, typed  # (checks type and range: params.py)
from nsys_diagnose.errors import UsageError


def _matches(rules: dict[str, Rule], names: Iterable[str], option: str) -> set[str]:
    """Rule ids named by `names`, each a rule id or a category (every rule in it)."""
    categories = {r.category for r in rules.values()}
    chosen: set[str] = set()
    unknown = []
    for name in names:
        if name in rules:
            chosen.add(name)
        elif name in categories:
            chosen |= {r.id for r in rules.values() if r.category == name}
        else:
            unknown.append(name)
    if unknown:
        raise UsageError(f"{option}: no rule or category {', '.join(map(repr, unknown))} "
                         f"(categories: {', '.join(sorted(categories))}; rules: `nsys-diagnose rules`)")
    return chosen


def resolve(rules: dict[str, Rule], select: Iterable[str] | None = None,
            ignore: Iterable[str] | None = None, *, origin: str = "--select",
            ignore_origin: str = "--ignore") -> list[str] | None:
    """The rule ids to run, in catalog order; None means every rule (nothing selected or ignored).
    `origin` and `ignore_origin` name where each list came from, for the error messages."""
    select, ignore = list(select or []), list(ignore or [])
    if not select and not ignore:
        return None
    chosen = _matches(rules, select, origin) if select else set(rules)
    chosen -= _matches(rules, ignore, ignore_origin)
    if not chosen:
        where = " and ".join(o for o, given in ((origin, select), (ignore_origin, ignore)) if given)
        raise UsageError(f"{where}: the selection leaves no rule to run")
    return [rule_id for rule_id in rules if rule_id in chosen]


def overrides_from(params: Mapping[str, Any] | None, rules: dict[str, Rule], *,
                   origin: str = "params") -> dict[str, dict[str, Any]]:
    """{"rule.param": value} (or {"rule": {"param": value}}) -> {rule id: {param: typed value}}."""
    out: dict[str, dict[str, Any]] = {}
    for key, value in (params or {}).items():
        if isinstance(value, Mapping):  # the nested form: {"rule": {"param": value}}
            pairs = [(f"{key}.{k}", v) for k, v in value.items()]
        else:
            pairs = [(key, value)]
        for name, v in pairs:
            rule_id, dot, param = str(name).partition(".")
            context = f"{origin} {name!r}"
            if not dot:
                raise UsageError(f"{context}: expected a key RULE.PARAM")
            spec = declared(rules, rule_id, param, context)
            out.setdefault(rule_id, {})[param] = typed(v, spec, context)
    return out


def merge_overrides(*layers: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Later layers win per parameter (the config file, then --set)."""
    out: dict[str, dict[str, Any]] = {}
    for layer in layers:
        for rule_id, params in layer.items():
            out.setdefault(rule_id, {}).update(params)
    return out


def parse_severities(pairs: Iterable[str], *, origin: str = "--severity") -> dict[str, str]:
    """`RULE=SEVERITY` strings -> {rule: severity}."""
    out = {}
    for pair in pairs:
        rule_id, eq, level = pair.partition("=")
        if not eq or not rule_id.strip():
            raise UsageError(f"{origin} {pair!r}: expected RULE=SEVERITY (info, warning or error)")
        out[rule_id.strip()] = level.strip()
    return out


def with_severities(rules: dict[str, Rule], levels: Mapping[str, str], *,
                    origin: str = "--severity") -> dict[str, Rule]:
    """The rules with every finding of each named rule (or category) raised or lowered to the
    given severity. The rules are copies: the catalog stays as loaded."""
    if not levels:
        return rules
    out = dict(rules)
    for name, level in levels.items():
        if level not in SEVERITY_RANK:
            raise UsageError(f"{origin} {name}={level}: severity must be one of {', '.join(SEVERITY_RANK)}")
        for rule_id in sorted(_matches(rules, [name], origin)):
            rule = out[rule_id]
            specs = [s.model_copy(update={"severity": level}) for s in rule.findings]
            out[rule_id] = rule.model_copy(update={"severity": level, "findings": specs})
    return out
