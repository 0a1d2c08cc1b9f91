"""Text from the traced program or the file system, made safe for a terminal and a one-line field.

Kernel names, NVTX ranges and file names can hold any character. A newline splits a table row or
a one-line error; an escape sequence (ESC, or the 8-bit CSI) can move the cursor, recolour the
terminal or set its title (OSC); Unicode line separators split lines for many readers; bidi
overrides make a name read differently from what it is. Two ways out:
- inline(): for reports, every such character becomes a space (the text stays readable);
- printable(): for messages naming a file, each becomes a visible escape (\\x1b, \\u202e), so
  the name can still be told apart and typed.
Two more for the formats that give text a meaning of its own:
- markdown(): inline(), and no name can open raw HTML (`<img onerror>`, and `kernel<float>`,
  which CommonMark reads as a tag and hides), a link or an image (`![t](https://...)`, which a
  terminal shows as a hyperlink), or an autolink (`https://...`);
- spreadsheet_cell(): a text cell a spreadsheet would run as a formula (=, +, -, @, tab, CR
  first) gets a leading apostrophe, as OWASP advises for CSV.
"""

from __future__ import annotations

import re

# C0 controls and DEL, C1 controls, Unicode line/paragraph separators, bidi embeddings,
# overrides and isolates.
UNSAFE = [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_SPACES = dict.fromkeys(UNSAFE, " ")
_ESCAPES = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in UNSAFE}


def inline(text: object) -> str:
    """`text` on one line, every control or bidi character a space."""
    return str(text).translate(_SPACES)


def printable(text: object) -> str:
    """`text` on one line, every control or bidi character a visible escape."""
    return str(text).translate(_ESCAPES)


def has_unsafe(text: str) -> bool:
    return any(ord(c) in _SPACES for c in text)


# Backslash escapes are CommonMark's own: the rendered text reads as the name does. `://` and
# `www.` lose the shape GitHub's autolinks look for.
_MARKDOWN_ACTIVE = re.compile(r"[<\[\]]|(?<=:)/(?=/)|(?<=www)\.", re.IGNORECASE)


def markdown(text: object) -> str:
    """`text` on one line, safe to place in Markdown (see the module's docstring)."""
    return _MARKDOWN_ACTIVE.sub(r"\\\g<0>", inline(text))


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(text: str) -> str:
    return "'" + text if text.startswith(FORMULA_START) else text
