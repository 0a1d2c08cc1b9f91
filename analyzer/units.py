"""Human units for messages and tables: every number printed carries its unit."""

from __future__ import annotations

import re
import string
from typing import Any

from nsys_diagnose import limits
from nsys_diagnose.kernel_labels import short_label

# [[fill]align][sign][z][#][0][width][grouping][.precision][type]: the numbers that size the output
_SPEC_NUMBERS = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?(\d*)[_,]?(?:\.(\d+))?", re.S)


def duration(ns: float | None) -> str:
    if ns is None:
        return "n/a"
    ns = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}" if abs(ns) < 100 * scale else f"{ns / scale:,.0f} {unit}"
    return f"{ns:.0f} ns"


def size(b: float | None) -> str:
    if b is None:
        return "n/a"
    b = float(b)
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(b) >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b:.0f} B"


def rate(bytes_per_s: float | None) -> str:
    return "n/a" if bytes_per_s is None else size(bytes_per_s) + "/s"


def pct(p: float | None) -> str:
    return "n/a" if p is None else f"{float(p):.1f} %"


def timestamp(ns: float | None) -> str:
    """A point on the session timeline, in seconds from the start of the session clock."""
    return "n/a" if ns is None else f"{float(ns) / 1e9:.3f} s"


SPECS = {"dur": duration, "bytes": size, "rate": rate, "pct": pct, "ts": timestamp,
         "n": lambda v: "n/a" if v is None else f"{v:,}", "x": lambda v: "n/a" if v is None else f"{float(v):.2g}x",
         "kernel": lambda v: "n/a" if v is None else short_label(str(v))}


def plural(noun: str) -> str:
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


class MessageFormatter(string.Formatter):
    """str.format with unit specs ({x:dur}, {x:bytes}, {x:pct}, {x:rate}, {x:ts}, {x:n}, {x:x},
    {x:kernel} for a kernel name shortened as the HTML labels kernels, {x:n noun} for a count with
    its noun, singular or plural).
    Field names are plain column names only: no attribute or index access from rule files."""

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        if not field_name.isidentifier():
            raise KeyError(f"'{field_name}' is not a plain column name")
        return kwargs[field_name], field_name

    def format_field(self, value: Any, format_spec: str) -> str:
        sizes = _SPEC_NUMBERS.match(format_spec)
        for number in (sizes[1], sizes[2]) if sizes else ():
            if number and int(number) > limits.MAX_FORMAT_WIDTH:  # {x:>300000000} is 300 MB of spaces
                raise ValueError(f"format width or precision {int(number):,} is above {limits.MAX_FORMAT_WIDTH:,}")
        if format_spec.startswith("n ") and value is not None:  # {calls:n call} -> "1 call", "2 calls"
            noun = format_spec[2:]
            return f"{value:,} {noun if value == 1 else plural(noun)}"
        if format_spec in SPECS:
            return SPECS[format_spec](value)
        if value is None:
            return "n/a"
        return format(value, format_spec)


def render(template: str, row: dict[str, Any], limit: int = limits.MAX_MESSAGE_BYTES) -> str:
    """The message, at most `limit` bytes (cut with a marker). Built field by field, so that a
    template naming a long value ten thousand times stops at the limit instead of growing."""
    f = MessageFormatter()
    out: list[str] = []
    size = 0
    for literal, field, spec, conversion in f.parse(template):
        out.append(literal)
        size += len(literal)
        if field is not None:
            if field == "":
                raise KeyError("'{}' names no column")
            value = f.convert_field(f.get_field(field, (), row)[0], conversion)
            spec = f.vformat(spec, (), row) if "{" in spec else spec  # {x:{width}}
            piece = f.format_field(value, spec)
            out.append(piece)
            size += len(piece)
        if size > limit:
            break
    return limits.clip("".join(out), limit)
