"""The one builder of a request's progress token and ``_meta`` that both eras' transports use."""

from __future__ import annotations

from fastapi_mrtr.client._request_meta import listening, with_meta
from fastapi_mrtr.client._types import ProgressNotification


async def on_progress(note: ProgressNotification) -> None:
    """A progress callback; what it does is not under test here."""


def test_no_progress_callback_asks_for_no_progress_and_draws_no_number() -> None:
    drawn: list[int] = []

    def counter() -> int:
        drawn.append(7)
        return 7

    assert listening(None, None, counter).token is None
    assert listening(None, None, counter).sink is None
    assert drawn == []
    assert listening(on_progress, None, counter).token == "mrtr-progress-7"
    assert drawn == [7]


def test_a_requests_own_id_numbers_its_token() -> None:
    listens = listening(on_progress, None, 12)
    assert listens.token == "mrtr-progress-12"
    assert listens.sink is not None


def test_protocol_keys_win_over_the_callers_and_the_token_is_added() -> None:
    sent = with_meta({"name": "t"}, {"trace": "abc", "version": "1999"}, "mrtr-progress-3", {"version": "2026"})
    assert sent == {"name": "t", "_meta": {"trace": "abc", "version": "2026", "progressToken": "mrtr-progress-3"}}


def test_an_empty_meta_is_left_out_and_params_are_not_changed() -> None:
    params = {"name": "t", "arguments": {}}
    sent = with_meta(params, None, None)
    assert sent == params
    assert sent is not params
    assert with_meta(params, {}, None, {}) == params
    assert "_meta" not in params
