"""How the OAuth requests go out.

Every one of them passes ``auth=NO_AUTH``: it may be sent through the very ``httpx.AsyncClient``
that :class:`OAuthClientAuth` is installed on, and must not come back into the flow (whose lock
it holds) or carry a bearer token to the authorization server.
"""

from __future__ import annotations

import httpx

NO_AUTH = httpx.Auth()  # the base class sends requests as they are
