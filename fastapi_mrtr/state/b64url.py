"""Unpadded base64url, the alphabet of every token: encoding, and decoding that accepts only the
one canonical text of each byte string (so no two tokens decode to the same bytes)."""

from __future__ import annotations

import binascii
import re

__all__ = ["B64URL_CHARS", "b64url_decode_strict", "b64url_encode"]

B64URL_CHARS = re.compile(r"[A-Za-z0-9_-]*")
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
# An unpadded text of length 4n+2 (4n+3) ends in a character carrying 2 (4) bits of data; the rest
# of its six bits must be zero, or two different texts would decode to the same bytes.
_SPARE_BITS = {2: 0b1111, 3: 0b11}
# binascii straight, without the base64 module's wrappers (each token is encoded and decoded on
# every round): the alphabet as bytes to delete, and the two characters that differ from base64.
_ALPHABET_BYTES = _ALPHABET.encode("ascii")
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


def b64url_encode(raw: bytes) -> str:
    return binascii.b2a_base64(raw, newline=False).translate(_TO_URLSAFE).rstrip(b"=").decode("ascii")


def b64url_decode_strict(text: str) -> bytes | None:
    """Decode unpadded base64url, or None unless ``text`` is the one canonical encoding."""
    # Checked first: the stdlib decoder would otherwise skip or translate foreign characters.
    # Deleting the alphabet leaves nothing exactly when B64URL_CHARS matches the whole text.
    if not text.isascii():
        return None
    data = text.encode("ascii")
    if data.translate(None, _ALPHABET_BYTES) or len(data) % 4 == 1:
        return None
    spare = _SPARE_BITS.get(len(data) % 4)
    if spare is not None and _ALPHABET.index(text[-1]) & spare:
        return None
    return binascii.a2b_base64(data.translate(_FROM_URLSAFE) + b"=" * (-len(data) % 4))
