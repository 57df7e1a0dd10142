"""The :class:`~fastapi_mrtr.client.MrtrClient` methods that register the answers to a server's questions.

A mixin of ``MrtrClient`` (which owns ``_handlers``): each setter stores one handler and says
whether it talks to a person (``interactive``: such handlers take turns, see ``_turns``).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from fastapi_mrtr.client._handlers import ElicitationHandler, RootsHandler, SamplingHandler
from fastapi_mrtr.wire.mrtr import ELICITATION_CREATE, ROOTS_LIST, SAMPLING_CREATE_MESSAGE

if TYPE_CHECKING:
    from fastapi_mrtr.client._handlers import InputHandlers


class HandlerSetters:
    """``set_elicitation_handler``, ``set_sampling_handler`` and ``set_roots_handler``."""

    if TYPE_CHECKING:  # what MrtrClient provides
        _handlers: InputHandlers

    def set_elicitation_handler(self, handler: ElicitationHandler | None, *, interactive: bool = False) -> None:
        """Answer ``elicitation/create`` (form and URL mode); ``None`` unregisters.

        The handler gets :class:`~fastapi_mrtr.wire.mrtr.ElicitRequestParams` and returns an
        :class:`~fastapi_mrtr.wire.mrtr.ElicitResult` or its dict. Declares
        ``{"elicitation": {"form": {}, "url": {}}}``. ``interactive=True``: the handler talks to
        a person, so it takes turns with the other interactive handlers (one at a time, in the
        order the server listed the requests) instead of running beside them.
        """
        self._handlers.elicitation = handler
        self._mark_interactive(ELICITATION_CREATE, interactive)

    def set_sampling_handler(self, handler: SamplingHandler | None, *, interactive: bool = False) -> None:
        """Answer ``sampling/createMessage``; declares ``{"sampling": {}}``. Deprecated in the spec.

        ``interactive``: as for :meth:`set_elicitation_handler` (a person types the model's reply).
        """
        warnings.warn(
            "sampling is deprecated in MCP 2026-07-28; the handler still works",
            DeprecationWarning,
            stacklevel=2,
        )
        self._handlers.sampling = handler
        self._mark_interactive(SAMPLING_CREATE_MESSAGE, interactive)

    def set_roots_handler(self, handler: RootsHandler | None, *, interactive: bool = False) -> None:
        """Answer ``roots/list`` (a no-argument callable); declares ``{"roots": {}}``. Deprecated.

        ``interactive``: as for :meth:`set_elicitation_handler` (only if it asks a person).
        """
        warnings.warn(
            "roots are deprecated in MCP 2026-07-28; the handler still works",
            DeprecationWarning,
            stacklevel=2,
        )
        self._handlers.roots = handler
        self._mark_interactive(ROOTS_LIST, interactive)

    def _mark_interactive(self, method: str, interactive: bool) -> None:
        if interactive:
            self._handlers.interactive.add(method)
        else:
            self._handlers.interactive.discard(method)
