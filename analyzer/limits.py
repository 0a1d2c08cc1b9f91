"""Byte bounds on what a rule can put into a report, so that no rule makes a report without end.

A rule (built in or the user's own) returns values, and messages are rendered from them; without
bounds one SELECT of a 100 MB string wrote a 500 MB report (the value in the message, the
evidence and the rows), and the same again into the report cache. Beyond a bound, text is cut
and says so ("... [truncated: N bytes in all]"); rows beyond a rule's budget are left out (the
row count still says how many there were).
"""

from __future__ import annotations

import json
from typing import Any

# A kernel name of a deep C++ template can pass 100 kB; nothing in a report is worth more.
MAX_VALUE_BYTES = 128 * 1024
MAX_MESSAGE_BYTES = 8 * 1024       # a finding's rendered message
MAX_REASON_BYTES = 2 * 1024        # why a rule failed or was skipped
MAX_RULE_BYTES = 4 * 1024 * 1024   # a rule's rows and findings together, as JSON
MAX_LIST_ITEMS = 1000              # elements of a list value kept
MAX_FORMAT_WIDTH = 1000            # width or precision in a message's format spec


def marker(size: int) -> str:
    return f" ... [truncated: {size:,} bytes in all]"


def clip(text: str, limit: int, size: int | None = None) -> str:
    """`text` at most `limit` bytes of UTF-8 (a marker included) when longer; `size` is the
    original length in bytes, when the text was already cut before (in SQL)."""
    if size is None and len(text) * 4 <= limit:  # cannot be over: skip the encoding
        return text
    raw = text.encode("utf-8", "surrogatepass")
    size = max(size or 0, len(raw))
    if size <= limit and len(raw) <= limit:
        return text
    note = marker(size)
    keep = raw[: max(0, limit - len(note.encode()))]
    return keep.decode("utf-8", "ignore") + note


def too_large(size: int, what: str = "value") -> str:
    """What stands in for a value that is not text and too large to keep."""
    return f"[{what} of {size:,} bytes: too large to keep]"


def json_size(value: Any) -> int:
    """Bytes of `value` as the JSON report writes it (UTF-8)."""
    return len(json.dumps(value, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))


def within_budget(items: list, budget: int = MAX_RULE_BYTES) -> tuple[list, int]:
    """The leading items whose JSON fits `budget` bytes, and the bytes they use."""
    kept, used = [], 0
    for item in items:
        size = json_size(item)
        if used + size > budget:
            break
        kept.append(item)
        used += size
    return kept, used
