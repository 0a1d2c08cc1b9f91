"""A finding's words in the report's headline, rendered from its row as its message is.

A rule declares them beside `message:` (`headline: {cause, where, cost, fix}`, and `headline:` on
an advice part for the fix that part gives); a rule without them still gets a headline: its title
as the cause and its claim's place as where. The composer (nsys_diagnose.headline) adds the
verdict, the cost per step and the gain, and orders and joins the parts.
"""

from __future__ import annotations

import math
import re
import string
from typing import Any

from nsys_diagnose.engine.model import FindingSpec, HeadlineParts, Rule
from nsys_diagnose.units import render

# Most words each part may hold (a template field counts as one): the whole headline is held to
# 30 words, and the verdict, cost and gain the composer adds take about 15 of them.
WORD_LIMITS = {"cause": 6, "where": 5, "fix": 8}


def template_words(template: str) -> int:
    """Words of a template, each field one word (`in "{top_place}"` is 2)."""
    try:
        literal = "".join(text + ("X" if field is not None else "")
                          for text, field, _, _ in string.Formatter().parse(template))
    except ValueError:
        literal = template
    return len(literal.split())


def default_cause(title: str) -> str:
    """A rule's title as a cause, lower-cased where it is not an acronym: 'Launch-bound loop' ->
    'launch-bound loop', 'CUDA API overhead' stays."""
    return title[:1].lower() + title[1:] if title[1:2].islower() else title


def _fields(template: str) -> list[str]:
    try:
        return [re.split(r"[.\[]", f)[0] for _, f, _, _ in string.Formatter().parse(template) if f]
    except ValueError:
        return []


def _optional(template: str | None, row: dict[str, Any]) -> str | None:
    """The rendered template, or None where it names a null value (a range the trace lacks)."""
    if not template or any(row.get(f) is None or row.get(f) == "" for f in _fields(template)):
        return None
    return " ".join(render(template, row).split())


def parts(rule: Rule, spec: FindingSpec, flags: dict[str, Any], row: dict[str, Any]) -> HeadlineParts:
    """`flags`: the composed query's row (its __advice_i columns say which advice parts hold);
    `row`: the result row (the evidence)."""
    h = spec.headline
    cause = _optional(h.cause, row) if h else None
    where = _optional(h.where, row) if h else None
    if where is None and (h is None or h.where is None) and spec.claims and spec.claims.place:
        where = _optional(f'in "{{{spec.claims.place}}}"', row)
    options = [(text, tuple(p.fixes)) for i, p in enumerate(rule.advice)
               if p.headline and (not p.when or flags.get(f"__advice_{i}"))
               and (text := _optional(p.headline, row)) is not None]
    if h is not None and (text := _optional(h.fix, row)) is not None:
        options.append((text, tuple(spec.fixes)))
    cost_column = (h.cost if h and h.cost else None) or spec.impact_ns
    cost = row.get(cost_column) if cost_column else None
    return HeadlineParts(cause=cause or default_cause(rule.title), where=where, fix_options=options,
                         cost_ns=int(cost) if isinstance(cost, (int, float)) and math.isfinite(cost) and cost >= 0 else None)
