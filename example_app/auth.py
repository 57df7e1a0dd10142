"""Demo bearer-token auth: a real FastAPI security dependency, with tokens from the environment."""

from __future__ import annotations

import os
from typing import Annotated

from fastapi import Depends, HTTPException
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from .models import User

bearer = HTTPBearer(auto_error=False)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


def _tokens() -> dict[str, User]:
    # BOOKSHOP_TOKENS="alice-token:alice:admin,bob-token:bob"
    raw = os.environ.get("BOOKSHOP_TOKENS", "alice-token:alice:admin,bob-token:bob")
    users: dict[str, User] = {}
    for entry in filter(None, raw.split(",")):
        token, name, *role = entry.split(":")
        users[token] = User(name=name, is_admin=role == ["admin"])
    return users


def current_user(credentials: Credentials) -> User:
    user = _tokens().get(credentials.credentials) if credentials else None
    if user is None:
        raise HTTPException(401, "Sign in: send Authorization: Bearer <token>", headers={"WWW-Authenticate": "Bearer"})
    return user


def optional_user(credentials: Credentials) -> User | None:
    return _tokens().get(credentials.credentials) if credentials else None
