"""Sealing and opening of ``requestState`` tokens: ``RequestStateSealer`` (fastapi_mrtr.state).

The golden test alone calls the private minting function, the one place a nonce can be chosen."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from hypothesis import given, settings
from hypothesis import strategies as st

from fastapi_mrtr.state import (
    InvalidRequestStateError,
    RequestStateSealer,
    RequestStateTooLargeError,
    StateBinding,
    StateClaims,
    StateKeyRing,
    arguments_digest,
)
from fastapi_mrtr.state import sealing as rs
from fastapi_mrtr.state.b64url import B64URL_CHARS, b64url_decode_strict, b64url_encode

SECRET_OLD = "old-secret-0123456789-abcdefghijklmnopqrstuvwxyz"
SECRET_NEW = b"new-secret-0123456789-ABCDEFGHIJKLMNOPQRSTUVWXYZ"
NOW = 1_800_000_000.0
TTL = 600.0
BINDING = StateBinding(
    method="tools/call",
    target="book_flight",
    arguments_digest=arguments_digest({"to": "LIS", "passengers": 2}),
    audience="test-server",
    principal="user-1",
)
DATA: dict[str, Any] = {"ans": {"seat": {"action": "accept", "data": {"row": 12}}}, "s": [1, "two", None]}
GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "request_state_golden.json"

OLD = StateKeyRing(SECRET_OLD)
NEW = StateKeyRing(SECRET_NEW)


def mint(
    keys: StateKeyRing = OLD,
    binding: StateBinding = BINDING,
    *,
    data: dict[str, Any] = DATA,
    ttl: float = TTL,
    max_bytes: int = 16384,
    now: float = NOW,
    **seal: Any,
) -> str:
    return RequestStateSealer(keys, ttl=ttl, max_bytes=max_bytes).seal(data, binding, now=now, **seal)


def verify(
    token: object,
    keys: StateKeyRing = OLD,
    binding: StateBinding = BINDING,
    *,
    now: float = NOW,
    **options: Any,
) -> StateClaims:
    return RequestStateSealer(keys, **options).open(token, binding, now=now)


def reason_of(token: object, **kw: Any) -> str:
    with pytest.raises(InvalidRequestStateError) as info:
        verify(token, **kw)
    return info.value.reason


def seal_raw(plaintext: bytes, keys: StateKeyRing = OLD, audience: str = BINDING.audience) -> str:
    """A correctly encrypted token around an arbitrary plaintext (what only a key holder can make)."""
    key = keys.sealing_key
    nonce = b"\x00" * 12
    sealed = key.aead.encrypt(nonce, plaintext, b"v1." + key.kid + audience.encode())
    return "v1." + b64url_encode(key.kid + nonce + sealed)


def claims_json(**overrides: Any) -> bytes:
    claims: dict[str, Any] = {
        "v": 1, "jti": "j", "fid": "f", "r": 1, "iat": int(NOW), "exp": None, "fexp": None,
        "m": BINDING.method, "t": BINDING.target, "a": BINDING.arguments_digest,
        "aud": BINDING.audience, "p": None, "d": {},
    }  # fmt: skip
    claims.update(overrides)
    return json.dumps({k: v for k, v in claims.items() if v is not _MISSING}).encode()


_MISSING = object()


def with_char(token: str, index: int, char: str) -> str:
    return token[:index] + char + token[index + 1 :]


def flip(token: str, index: int) -> str:
    return with_char(token, index, "A" if token[index] != "A" else "B")


def b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def token_with_spare_bits() -> str:
    """A token whose body length is not a multiple of 4, so its last char carries unused bits."""
    for filler in range(4):
        token = mint(data={"x": "y" * filler})
        if (len(token) - 3) % 4 in (2, 3):
            return token
    raise AssertionError("unreachable: lengths cycle through every residue")


# --- round trip, claims, keys ------------------------------------------------------------------


def test_round_trip_and_claims() -> None:
    token = mint(round=3, flow_deadline=NOW + 1800)
    assert token.startswith("v1.")
    claims = verify(token)
    assert claims.data == DATA
    assert claims.round == 3
    assert claims.issued_at == int(NOW)
    assert claims.expires_at == int(NOW + TTL)
    assert claims.flow_deadline == int(NOW + 1800)
    assert claims.key_id == OLD.key_ids[0]
    assert len(claims.jti) == 22 and len(claims.flow_id) == 22
    assert claims.jti != verify(mint()).jti, "jti is random per token"


def test_flow_id_is_kept_and_ttl_zero_never_expires() -> None:
    claims = verify(mint(flow_id="flow-1", ttl=0), now=NOW + 10**9)
    assert claims.flow_id == "flow-1"
    assert claims.expires_at is None and claims.flow_deadline is None


def test_same_inputs_random_nonce_give_different_tokens() -> None:
    assert mint(flow_id="f") != mint(flow_id="f")
    # Even with the token id fixed, the nonce the private minter draws makes every token differ.
    same = {"keys": OLD, "binding": BINDING, "ttl": TTL, "round": 1, "now": NOW, "jti": "j", "flow_id": "f"}
    assert rs._mint_request_state(DATA, **same) != rs._mint_request_state(DATA, **same)


def test_the_sealer_takes_no_nonce_and_keeps_its_settings() -> None:
    sealer = RequestStateSealer(SECRET_OLD, ttl=30)
    with pytest.raises(TypeError):
        sealer.seal(DATA, BINDING, nonce=b"\x00" * 12)  # type: ignore[call-arg]
    claims = sealer.open(sealer.seal(DATA, BINDING, round=2, now=NOW), BINDING, now=NOW)
    assert (claims.round, claims.expires_at, claims.key_id) == (2, int(NOW + 30), OLD.key_ids[0])
    assert sealer.keys.key_ids == OLD.key_ids, "a bare secret becomes a one-key ring"
    assert repr(sealer).startswith("RequestStateSealer(StateKeyRing(kids=[") and SECRET_OLD not in repr(sealer)
    with pytest.raises(ValueError, match="ttl"):
        RequestStateSealer(OLD, ttl=-1)


def test_rotation() -> None:
    rolling = StateKeyRing([SECRET_NEW, SECRET_OLD])
    old_token = mint(keys=OLD)
    assert verify(old_token, keys=rolling).key_id == OLD.key_ids[0]
    new_token = mint(keys=rolling)
    assert verify(new_token, keys=rolling).key_id == NEW.key_ids[0]
    assert verify(new_token, keys=NEW).data == DATA
    assert reason_of(old_token, keys=NEW) == "unknown_key"
    assert rolling.key_ids == [NEW.key_ids[0], OLD.key_ids[0]]


@pytest.mark.parametrize(
    "secrets",
    [
        pytest.param(b"x" * 31, id="bytes-31"),
        pytest.param("x" * 31, id="str-31"),
        pytest.param([SECRET_NEW, "short"], id="one-short-in-list"),
    ],
)
def test_short_secrets_are_refused(secrets: Any) -> None:
    with pytest.raises(ValueError, match="request_state_key must be at least 32 bytes"):
        StateKeyRing(secrets)


def test_secret_length_counts_utf8_bytes_and_empty_list_is_refused() -> None:
    StateKeyRing("é" * 16)  # 16 characters, 32 bytes
    with pytest.raises(ValueError, match="at least one"):
        StateKeyRing([])
    with pytest.raises(TypeError):
        StateKeyRing([123])  # type: ignore[list-item]


def test_ephemeral_rings_do_not_open_each_others_tokens() -> None:
    a, b = StateKeyRing.ephemeral(), StateKeyRing.ephemeral()
    assert a.is_ephemeral and not OLD.is_ephemeral
    assert verify(mint(keys=a), keys=a).data == DATA
    assert reason_of(mint(keys=a), keys=b) == "unknown_key"


def test_repr_hides_secrets() -> None:
    ring = StateKeyRing([SECRET_NEW, SECRET_OLD])
    text = repr(ring) + str(ring)
    assert text.startswith("StateKeyRing(kids=['")
    for secret in (SECRET_NEW.decode(), SECRET_OLD):
        assert secret not in text and secret[:8] not in text
    assert "ephemeral=True" in repr(StateKeyRing.ephemeral())


# --- every failure has its reason --------------------------------------------------------------

Case = Callable[[], tuple[object, dict[str, Any]]]


def good() -> str:
    return mint()


FAILURES = [
    # 1 type and size
    pytest.param(lambda: (None, {}), "not_a_string", id="none"),
    pytest.param(lambda: (123, {}), "not_a_string", id="int"),
    pytest.param(lambda: (good().encode(), {}), "not_a_string", id="bytes"),
    pytest.param(lambda: ({"v": 1}, {}), "not_a_string", id="dict"),
    pytest.param(lambda: ("v1." + "A" * 20_000, {}), "too_large", id="oversized"),
    pytest.param(lambda: (good(), {"max_bytes": len(good()) - 1}), "too_large", id="over-custom-max"),
    # 2 envelope
    pytest.param(lambda: ("v2." + good()[3:], {}), "bad_prefix", id="prefix-v2"),
    pytest.param(lambda: (good()[3:], {}), "bad_prefix", id="prefix-missing"),
    pytest.param(lambda: ("V1." + good()[3:], {}), "bad_prefix", id="prefix-case"),
    pytest.param(lambda: (good() + "=", {}), "bad_encoding", id="padding"),
    pytest.param(lambda: (with_char(good(), 40, "+"), {}), "bad_encoding", id="plus"),
    pytest.param(lambda: (with_char(good(), 40, "/"), {}), "bad_encoding", id="slash"),
    pytest.param(lambda: (with_char(good(), 40, " "), {}), "bad_encoding", id="space"),
    pytest.param(lambda: (good() + "\n", {}), "bad_encoding", id="newline"),
    pytest.param(lambda: (with_char(good(), 40, "é"), {}), "bad_encoding", id="non-ascii"),
    pytest.param(lambda: (good()[: 3 + 20], {}), "truncated", id="truncated"),
    pytest.param(lambda: ("v1.", {}), "truncated", id="empty-body"),
    pytest.param(lambda: (mint(keys=NEW), {}), "unknown_key", id="wrong-key"),
    pytest.param(lambda: (flip(good(), 4), {}), "unknown_key", id="flipped-kid"),
    # 3 AES-GCM
    pytest.param(lambda: (flip(good(), 60), {}), "tampered", id="flipped-char"),
    pytest.param(lambda: (flip(good(), len(good()) - 5), {}), "tampered", id="flipped-tag"),
    pytest.param(lambda: ("v1." + b64url_encode(b64decode(good()[3:])[:-3]), {}), "tampered", id="cut-tail"),
    # audience is in the AAD, so the GCM tag is what catches another server's token
    pytest.param(lambda: (mint(binding=replace(BINDING, audience="other")), {}), "tampered", id="audience"),
    # 4 payload (only a key holder can produce these)
    pytest.param(lambda: (seal_raw(b"not json"), {}), "malformed", id="not-json"),
    pytest.param(lambda: (seal_raw(b"[1]"), {}), "malformed", id="json-array"),
    pytest.param(lambda: (seal_raw(claims_json(v=2)), {}), "malformed", id="version-2"),
    pytest.param(lambda: (seal_raw(claims_json(v=True)), {}), "malformed", id="version-bool"),
    pytest.param(lambda: (seal_raw(claims_json(d=_MISSING)), {}), "malformed", id="missing-d"),
    pytest.param(lambda: (seal_raw(claims_json(d=[1])), {}), "malformed", id="d-not-object"),
    pytest.param(lambda: (seal_raw(claims_json(r="1")), {}), "malformed", id="round-str"),
    pytest.param(lambda: (seal_raw(claims_json(r=True)), {}), "malformed", id="round-bool"),
    pytest.param(lambda: (seal_raw(claims_json(exp=1.5)), {}), "malformed", id="exp-float"),
    pytest.param(lambda: (seal_raw(claims_json(p=7)), {}), "malformed", id="principal-int"),
    # 5 time
    pytest.param(lambda: (mint(now=NOW + 61), {}), "issued_in_future", id="future-beyond-skew"),
    pytest.param(lambda: (mint(now=NOW + 1), {"max_clock_skew": 0}), "issued_in_future", id="future-no-skew"),
    pytest.param(lambda: (good(), {"now": NOW + TTL}), "expired", id="expired"),
    pytest.param(lambda: (mint(flow_deadline=NOW + 100), {"now": NOW + 100}), "flow_expired", id="flow"),
    # 6 binding
    pytest.param(lambda: (good(), {"binding": replace(BINDING, method="prompts/get")}), "wrong_method", id="method"),
    pytest.param(lambda: (good(), {"binding": replace(BINDING, target="other")}), "wrong_target", id="target"),
    pytest.param(
        lambda: (good(), {"binding": replace(BINDING, arguments_digest=arguments_digest({"to": "OPO"}))}),
        "wrong_arguments",
        id="arguments",
    ),
    pytest.param(lambda: (seal_raw(claims_json(aud="other")), {}), "wrong_audience", id="aud-claim"),
    # 7 principal
    pytest.param(
        lambda: (good(), {"binding": replace(BINDING, principal="user-2")}), "wrong_principal", id="principal"
    ),
    pytest.param(
        lambda: (good(), {"binding": replace(BINDING, principal=None)}),
        "wrong_principal",
        id="principal-only-in-token",
    ),
    pytest.param(
        lambda: (mint(binding=replace(BINDING, principal=None)), {}),
        "wrong_principal",
        id="principal-only-in-request",
    ),
    pytest.param(
        lambda: (good(), {"binding": replace(BINDING, principal="")}),
        "wrong_principal",
        id="principal-empty-is-not-none",
    ),
]


@pytest.mark.parametrize(("case", "reason"), FAILURES)
def test_every_failure_has_its_reason(case: Case, reason: str) -> None:
    token, kwargs = case()
    assert reason_of(token, **kwargs) == reason


def test_non_canonical_trailing_bits_are_refused() -> None:
    token = token_with_spare_bits()
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet.index(token[-1])
    # Flipping the lowest (unused) bit decodes to the same bytes, but is not the canonical spelling.
    other = with_char(token, len(token) - 1, alphabet[last ^ 1])
    assert b64decode(other[3:]) == b64decode(token[3:])
    assert reason_of(other) == "bad_encoding"


def test_size_is_checked_before_any_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(_: str) -> bytes:
        raise AssertionError("decoded an oversized token")

    monkeypatch.setattr(rs, "b64url_decode_strict", boom)
    assert reason_of("v1." + "A" * 10_000_000) == "too_large"
    assert reason_of("\x00" * 16385) == "too_large"


def test_time_edges() -> None:
    assert verify(mint(now=NOW + 60)).issued_at == int(NOW + 60), "within the clock skew"
    assert verify(good(), now=NOW + TTL - 1).data == DATA, "the last second before expiry"
    assert verify(mint(flow_deadline=NOW + 100), now=NOW + 99).flow_deadline == int(NOW + 100)


def test_principal_absent_on_both_sides_is_accepted() -> None:
    anonymous = replace(BINDING, principal=None)
    assert verify(mint(binding=anonymous), binding=anonymous).data == DATA


def test_invalid_request_state_carries_reason() -> None:
    error = InvalidRequestStateError("expired")
    assert error.reason == "expired" and isinstance(error, Exception)


# --- mint --------------------------------------------------------------------------------------


def test_mint_refuses_oversized_tokens() -> None:
    with pytest.raises(RequestStateTooLargeError, match="limit 200"):
        mint(data={"blob": "x" * 500}, max_bytes=200)
    assert issubclass(RequestStateTooLargeError, ValueError)
    assert len(mint(data={"blob": "x" * 500})) < 16384


def test_mint_validates_its_inputs() -> None:
    with pytest.raises(ValueError, match="nonce"):
        rs._mint_request_state(DATA, keys=OLD, binding=BINDING, ttl=TTL, round=1, nonce=b"short")
    with pytest.raises(ValueError):
        mint(ttl=-1)
    with pytest.raises(ValueError):
        mint(round=-1)
    with pytest.raises(ValueError):
        mint(data={"x": float("nan")})


# --- arguments_digest --------------------------------------------------------------------------


def test_arguments_digest_canonicalisation() -> None:
    digest = arguments_digest({"a": 1, "b": {"y": [1, 2], "x": None}})
    assert digest == arguments_digest({"b": {"x": None, "y": [1, 2]}, "a": 1}), "key order is irrelevant"
    assert len(digest) == 22 and B64URL_CHARS.fullmatch(digest)
    assert arguments_digest(None) == arguments_digest({})
    assert arguments_digest({"s": "é"}) == arguments_digest({"s": "\u00e9"})
    assert arguments_digest({"b": [1, 2]}) != arguments_digest({"b": [2, 1]}), "list order matters"


@pytest.mark.slow  # a property over 300 examples
@settings(max_examples=300)
@given(
    st.dictionaries(
        st.text(max_size=6),
        st.text(max_size=6)
        | st.integers()
        | st.booleans()
        | st.none()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.lists(st.integers()),
        max_size=5,
    )
)
def test_arguments_digest_of_flat_objects_is_the_canonical_encoders(arguments: dict[str, Any]) -> None:
    # The flat fast path must give the digest of the json module's canonical text, byte for byte.
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    expected = base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()[:22]
    assert arguments_digest(arguments) == expected


def test_arguments_digest_keeps_json_number_types() -> None:
    # Documented behaviour: the digest hashes the JSON text, so 1 and 1.0 (and true) differ.
    # Clients must resend the original arguments unchanged, as MRTR retries do.
    assert arguments_digest({"n": 1}) != arguments_digest({"n": 1.0})
    assert arguments_digest({"n": 1}) != arguments_digest({"n": True})
    with pytest.raises(ValueError):
        arguments_digest({"n": float("inf")})


# --- golden token ------------------------------------------------------------------------------


def golden() -> tuple[dict[str, Any], StateKeyRing, StateBinding]:
    fixture = json.loads(GOLDEN.read_text(encoding="utf-8"))
    b = fixture["inputs"]["binding"]
    binding = StateBinding(b["method"], b["target"], arguments_digest(b["arguments"]), b["audience"], b["principal"])
    return fixture, StateKeyRing(fixture["inputs"]["secret"]), binding


def test_golden_token_is_reproduced_byte_for_byte() -> None:
    fixture, ring, binding = golden()
    i = fixture["inputs"]
    assert binding.arguments_digest == fixture["arguments_digest"]
    assert ring.key_ids == [fixture["key_id"]]
    token = rs._mint_request_state(
        i["data"], keys=ring, binding=binding, ttl=i["ttl"], round=i["round"], flow_id=i["flow_id"],
        flow_deadline=i["flow_deadline"], max_bytes=i["max_bytes"], now=i["now"],
        nonce=bytes.fromhex(i["nonce_hex"]), jti=i["jti"],
    )  # fmt: skip
    assert token == fixture["token"]
    claims = RequestStateSealer(ring).open(token, binding, now=i["now"])
    assert claims.data == i["data"]
    assert (claims.jti, claims.flow_id, claims.round) == (i["jti"], i["flow_id"], i["round"])
    assert (claims.expires_at, claims.flow_deadline) == (i["now"] + i["ttl"], i["flow_deadline"])


def test_golden_token_matches_the_documented_format() -> None:
    # Decrypted with raw primitives, following only the module docstring.
    fixture, _, binding = golden()
    secret = fixture["inputs"]["secret"].encode()
    info = b"fastapi-mrtr/request-state/v1/enc"
    k_enc = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(secret)
    raw = b64decode(fixture["token"][3:])
    kid, nonce, sealed = raw[:4], raw[4:16], raw[16:]
    assert kid.hex() == fixture["key_id"]
    assert nonce.hex() == fixture["inputs"]["nonce_hex"]
    plaintext = AESGCM(k_enc).decrypt(nonce, sealed, b"v1." + kid + binding.audience.encode())
    claims = json.loads(plaintext)
    assert list(claims) == ["v", "jti", "fid", "r", "iat", "exp", "fexp", "m", "t", "a", "aud", "p", "d"]
    assert claims["d"] == fixture["inputs"]["data"]
    assert claims["p"] != fixture["inputs"]["binding"]["principal"] and len(claims["p"]) == 22


def _reference_decode_strict(text: str) -> bytes | None:
    """The strict decoder as first written (a regular expression, then the base64 module)."""
    if not B64URL_CHARS.fullmatch(text) or len(text) % 4 == 1:
        return None
    spare = {2: 0b1111, 3: 0b11}.get(len(text) % 4)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    if spare is not None and alphabet.index(text[-1]) & spare:
        return None
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@settings(max_examples=300)
@given(
    st.one_of(
        st.binary(max_size=80).map(b64url_encode),
        st.text(alphabet="AZaz09-_+/= \n\t.é\x00\u0660", max_size=40),
        st.text(max_size=20),
    )
)
def test_b64url_decode_strict_is_the_regular_expression_one(text: str) -> None:
    assert b64url_decode_strict(text) == _reference_decode_strict(text)


@given(st.binary(max_size=200))
def test_b64url_encode_is_unpadded_urlsafe_base64(raw: bytes) -> None:
    assert b64url_encode(raw) == base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    assert b64url_decode_strict(b64url_encode(raw)) == raw
