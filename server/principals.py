"""Who is asking: a bearer token maps to a principal (settings or the users table); no tokens, the local user.

Tokens are needed while any is configured or the users table has an active user: revoking the last user opens the
database again, as a fresh one is. Open means the local user only on a loopback server; a server bound to another
address never answers without a token (it refuses to start so, and refuses requests if it becomes so later).
"""

from __future__ import annotations

import hashlib
import hmac
import re

from fastapi import HTTPException, status
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import BaseModel
from sqlalchemy import Engine

from kernelgen.settings import Settings
from server.security import is_loopback
from storage.users import RESERVED_NAMES, find_user, has_active_users

NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
CHALLENGE = {"WWW-Authenticate": "Bearer"}


class Principal(BaseModel):
    """A caller of the API: its jobs are the ones it submitted; an admin sees and cancels every job."""

    name: str
    admin: bool = False

    def owns(self, owner: str | None) -> bool:
        """Tell whether this principal may see a job of this owner."""
        return self.admin or owner == self.name


# With no token configured anywhere (a loopback-only server), one local user owns and sees everything.
LOCAL = Principal(name="local", admin=True)


def configured_tokens(entries: list[str]) -> dict[str, str]:
    """Map each configured token to its principal: `name:token`, or a bare token named `token-<its hash>`."""
    tokens: dict[str, str] = {}
    for entry in entries:
        entry = entry.strip()
        if not entry:
            continue
        name, sep, token = entry.partition(":")
        if sep and NAME.fullmatch(name) and token:
            tokens[token] = name
        else:  # a bare token (also one whose part before a colon is no name)
            tokens[entry] = "token-" + hashlib.sha256(entry.encode()).hexdigest()[:8]
    return tokens


def check_token_names(entries: list[str]) -> None:
    """Refuse (ValueError) a configured token named like the tokenless local user, which owns every job made there."""
    reserved = sorted({name for name in configured_tokens(entries).values() if name.casefold() in RESERVED_NAMES})
    if reserved:
        raise ValueError(f"KERNELGEN_API_TOKENS: {', '.join(reserved)} is a reserved principal name (the user of a "
                         "server without tokens); name the token otherwise")


def tokens_exist(settings: Settings, engine: Engine) -> bool:
    """Tell whether some token admits a request: one is configured, or the users table has an active user."""
    return bool(configured_tokens(settings.api_tokens)) or has_active_users(engine)


def auth_required(settings: Settings, engine: Engine) -> bool:
    """Tell whether requests need a token: some token exists, or the server is reachable from other machines."""
    return tokens_exist(settings, engine) or not is_loopback(settings.host)


def authenticate(settings: Settings, engine: Engine, credentials: HTTPAuthorizationCredentials | None) -> Principal:
    """Return the principal of a request, or raise 401."""
    tokens = configured_tokens(settings.api_tokens)
    if not tokens and not has_active_users(engine):
        if is_loopback(settings.host):
            return LOCAL
        # The last user was revoked while this server listens beyond loopback: nobody is let in, not everybody.
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "this server has no active user or token: add one "
                            "(kernelgen users add NAME) or set KERNELGEN_API_TOKENS", headers=CHALLENGE)
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "missing bearer token (Authorization: Bearer <token>)",
                            headers=CHALLENGE)
    given = credentials.credentials
    name = None
    for token, owner in tokens.items():  # every comparison runs, in constant time each
        if hmac.compare_digest(given.encode(), token.encode()):
            name = owner
    if name is not None:
        return Principal(name=name, admin=name in settings.api_admins)
    user = find_user(engine, given)  # looked up by digest: the stored value is not the secret
    if user is not None:
        return Principal(name=user.name, admin=user.admin or user.name in settings.api_admins)
    raise HTTPException(status.HTTP_401_UNAUTHORIZED, "invalid bearer token", headers=CHALLENGE)
