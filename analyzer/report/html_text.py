"""Text and numbers for the HTML reports: escaping (every string from the export is escaped, since
kernel and NVTX names carry <, >, & and quotes), long names cut with a tooltip, SVG coordinates,
and JSON that is safe inside a <script> element."""

from __future__ import annotations

import json
from html import escape
from typing import Any

NAME_CHARS = 200      # longer names are cut in cells; the whole name stays in the tooltip
# Control characters from the export (NUL is not even valid HTML) show as spaces.
_CONTROLS = dict.fromkeys([*range(32), *range(127, 160)], " ")


def plain(text: str) -> str:
    return text.translate(_CONTROLS)


def esc(value: Any) -> str:
    """Text for HTML content and quoted attributes: control characters become spaces, then escape."""
    return escape(plain(str(value)), quote=True)


def clipped(text: str, limit: int = NAME_CHARS) -> str:
    """A long name cut for display, with the whole of it as a tooltip."""
    text = plain(text)
    if len(text) <= limit:
        return esc(text)
    return f'<span title="{esc(text)}">{esc(text[: limit - 1])}…</span>'


def num(x: float) -> str:
    """An SVG coordinate (in bins): three decimals are a thousandth of a bin."""
    s = f"{x:.3f}".rstrip("0").rstrip(".")
    return s if s not in ("", "-0") else "0"


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def script_json(data: Any) -> str:
    """JSON safe inside <script>: no '</script>' or '<!--' can be formed."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
