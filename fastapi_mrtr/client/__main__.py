"""``python -m fastapi_mrtr.client``: see :mod:`fastapi_mrtr.client.cli`."""

from __future__ import annotations

from fastapi_mrtr.client.cli import main

raise SystemExit(main())
