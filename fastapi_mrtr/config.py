"""Deprecated location, kept only until the facade imports ``InputRequiredConfig`` from its new home.

The server's config now lives in ``fastapi_mrtr.engine.options``, the client's in
``fastapi_mrtr.client.options``.
"""

from fastapi_mrtr.engine.options import InputRequiredConfig

__all__ = ["InputRequiredConfig"]
