"""Unpadded base64url, the alphabet of every token: encoding, and decoding that accepts only the
one canonical text of each byte string (so no two tokens decode to the same bytes)."""

from __future__ import annotations

import base64
import re

__all__ = ["B64URL_CHARS", "b64url_decode_strict", "b64url_encode"]

B64URL_CHARS = re.compile(r"[A-Za-z0-9_-]*")
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
# An unpadded text of length 4n+2 (4n+3) ends in a character carrying 2 (4) bits of data; the rest
# of its six bits must be zero, or two different texts would decode to the same bytes.
_SPARE_BITS = {2: 0b1111, 3: 0b11}


def b64url_encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def b64url_decode_strict(text: str) -> bytes | None:
    """Decode unpadded base64url, or None unless ``text`` is the one canonical encoding."""
    # Checked first: the stdlib decoder would otherwise skip or translate foreign characters.
    if not B64URL_CHARS.fullmatch(text) or len(text) % 4 == 1:
        return None
    spare = _SPARE_BITS.get(len(text) % 4)
    if spare is not None and _ALPHABET.index(text[-1]) & spare:
        return None
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
