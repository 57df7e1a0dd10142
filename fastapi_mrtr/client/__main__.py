"""``python -m fastapi_mrtr.client``: see :mod:`fastapi_mrtr.client.cli`."""

from __future__ import annotations

from fastapi_mrtr.client.cli import exit_at_once_on_interrupt, main

exit_at_once_on_interrupt()
raise SystemExit(main())
