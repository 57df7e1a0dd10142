"""A stand-in browser for the CLI's sign-in: ``$BROWSER`` runs it with the authorization URL.

``python tests/auth/cli_browser.py PLAN URL``: PLAN is a JSON file holding the sign-ins still to
come (``[{"account": "alice", "decline": "admin"}, ...]``); the first is taken out. It logs in at
the real provider as that account (tests/auth/signin.py), then brings the redirect back to the
CLI's loopback listener, as a browser does, and appends the scope that was asked for to
PLAN.requested. Exit status 0 once the CLI answered the redirect.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script by webbrowser

import httpx

from tests.auth.signin import Browser, SignIn


async def main(plan_file: Path, url: str) -> int:
    plan = json.loads(plan_file.read_text())
    step, rest = plan[0], plan[1:]
    plan_file.write_text(json.dumps(rest))
    redirect_uri = parse_qs(urlsplit(url).query)["redirect_uri"][0]
    browser = Browser(redirect_uri, [SignIn(step["account"], step.get("decline", ""))])
    back = await browser.redirect(url)
    with plan_file.with_suffix(".requested").open("a") as log:
        log.write(browser.requested[0] + "\n")
    async with httpx.AsyncClient(timeout=10) as http:
        answered = await http.get(back)
    return 0 if answered.status_code == 200 else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(Path(sys.argv[1]), sys.argv[2])))
