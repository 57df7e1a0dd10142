"""Server text made safe to print on a terminal.

Text a server sends (a tool's description, a question, a reason, a URL) reaches a person's
terminal. Escape sequences in it could clear the screen, retitle the window or show one link
while pointing at another (OSC 8), so every control character but newline and tab is shown
escaped instead of being sent to the terminal. The escape is JSON's (``\u001b``): inside a JSON
document printed for a script it means the same character, so the JSON stays valid and equal.
"""

from __future__ import annotations

import re

# C0 controls except tab and newline, DEL, and the C1 controls (ESC's 8-bit forms included).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with each terminal control character written as a visible escape (``\\u001b``)."""
    return _CONTROL.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
