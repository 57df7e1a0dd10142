"""A stand-in for the user's browser in the sign-in tests: it opens the authorization URL at the
real provider, fills in the provider's login page as the next account in line, and hands the
client the code from the redirect, as a person at a browser would. On the consent page it declines
the scopes listed for that sign-in (a person unticking a box)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx

_FORM_ACTION = re.compile(r'<form[^>]*action="([^"]+)"')
_PROMPT = re.compile(r'name="prompt" value="([^"]+)"')


@dataclass
class SignIn:
    account: str
    decline: str = ""  # space-separated scopes the user does not grant


@dataclass
class Browser:
    redirect_uri: str
    sign_ins: list[SignIn]  # one per authorization, in order
    codes: list[dict[str, str]] = field(default_factory=list)
    signed_in: list[str] = field(default_factory=list)
    requested: list[str] = field(default_factory=list)  # the scope parameter of each authorization

    async def open(self, authorization_url: str) -> None:
        """Follow the authorization request to its redirect back to the client, logging in on the way."""
        sign_in = self.sign_ins.pop(0)
        self.requested.append(parse_qs(urlsplit(authorization_url).query).get("scope", [""])[0])
        # A new browser profile per sign-in: no session left from the previous user.
        async with httpx.AsyncClient(follow_redirects=False, timeout=10) as browser:
            response = await browser.get(authorization_url)
            for _ in range(12):
                if response.is_redirect:
                    location = urljoin(str(response.url), response.headers["location"])
                    if location.startswith(self.redirect_uri):
                        query = parse_qs(urlsplit(location).query)
                        self.codes.append({name: values[0] for name, values in query.items()})
                        self.signed_in.append(sign_in.account)
                        return
                    response = await browser.get(location)
                    continue
                page = response.text
                action, prompt = _FORM_ACTION.search(page), _PROMPT.search(page)
                if response.status_code != 200 or action is None or prompt is None:
                    raise AssertionError(f"unexpected page at {response.url}: {response.status_code} {page[:300]}")
                form = {"prompt": prompt.group(1)}
                if form["prompt"] == "login":
                    form.update(login=sign_in.account, password="any")
                else:
                    form["decline"] = sign_in.decline
                target = urljoin(str(response.url), html.unescape(action.group(1)))
                response = await browser.post(target, data=form)
        raise AssertionError("the authorization did not come back to the client")

    async def redirect(self, authorization_url: str) -> str:
        """Sign in, and return where the provider sent the browser back (an authorization handler of
        this project's client)."""
        await self.open(authorization_url)
        return f"{self.redirect_uri}?{urlencode(self.codes[-1])}"

    async def callback(self) -> tuple[str, str | None, str | None]:
        code = self.codes[-1]
        if "code" not in code:
            raise AssertionError(f"the authorization server answered with an error: {code}")
        return code["code"], code.get("state"), code.get("iss")
