"""Text for the terminal: what crawled sites wrote is shown, never obeyed.

A page title, URL, robots.txt line or error reason comes from a site that may be hostile. Printed
raw, ``\\x1b]0;...\\x07`` retitles the terminal, ``\\x1b[2J`` clears it, ``\\r`` or a backspace
hides what came before, and a bidi override (U+202E) makes ``evil.com/moc.elgoog`` read as
something else. The commands pass every line they print through ``printable``.
"""

from __future__ import annotations

# C0 controls (with \t, \n, \r: a value's line break is shown, not obeyed), DEL, C1 controls
# (\x9b is a one-byte CSI), the bidi embeddings, overrides and isolates, and the line and
# paragraph separators
_ESCAPED = [*range(0x00, 0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029]
_SHORT = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}
_TABLE = {code: _SHORT.get(code) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}") for code in _ESCAPED}


def printable(text: str) -> str:
    """``text`` with every control character written as a Python escape (``\\x1b``, ``\\u202e``),
    so that it prints as one inert line."""
    return text.translate(_TABLE)
