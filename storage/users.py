"""API users with tokens: add, revoke, list, and find the user a bearer token belongs to."""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, CursorResult, Engine, func, or_, update
from sqlmodel import Session, col, select

from storage.models import ApiUser, ApiUserPublic, Batch, ChatThread, Job

NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
TOKEN_PREFIX = "kg_"
# The principal of every request when no token exists anywhere (server/principals.py LOCAL, an admin): a user of
# that name would own, and see, every job made without a token. Compared case-folded, so no look-alike either.
RESERVED_NAMES = frozenset({"local"})


class UserError(ValueError):
    """A user cannot be added or revoked; the message says why."""


def token_digest(token: str) -> str:
    """Return the SHA-256 a token is stored as."""
    return hashlib.sha256(token.encode()).hexdigest()


def add_user(engine: Engine, name: str, *, admin: bool = False) -> str:
    """Create a user (or give a revoked one a new token) and return its token, which is stored only as a digest."""
    if not NAME.fullmatch(name):
        raise UserError(f"a user name is 1-64 letters, digits, '_', '.' or '-', not {name!r}")
    if name.casefold() in RESERVED_NAMES:
        raise UserError(f"{name!r} is a reserved name: it is the principal of requests on a server without tokens, "
                        "which owns every job made there; pick another name")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with Session(engine) as session:
        row = session.exec(select(ApiUser).where(ApiUser.name == name)).first()
        if row is not None and row.revoked_at is None:
            raise UserError(f"user {name} exists; revoke it first to issue a new token")
        if row is None:
            row = ApiUser(name=name, admin=admin, token_sha256=token_digest(token))
        else:
            row.token_sha256, row.admin, row.revoked_at = token_digest(token), admin, None
            row.created_at = datetime.now(UTC)
        session.add(row)
        session.commit()
    return token


def revoke_user(engine: Engine, name: str) -> None:
    """Revoke a user's token: its requests are refused from now on; its jobs stay."""
    with Session(engine) as session:
        row = session.exec(select(ApiUser).where(ApiUser.name == name)).first()
        if row is None or row.revoked_at is not None:
            raise UserError(f"no active user {name}")
        row.revoked_at = datetime.now(UTC)
        session.add(row)
        session.commit()


def list_users(engine: Engine) -> list[ApiUserPublic]:
    """Return every user, revoked ones too, by name."""
    with Session(engine) as session:
        rows = session.exec(select(ApiUser).order_by(col(ApiUser.name))).all()
        return [ApiUserPublic.model_validate(row, from_attributes=True) for row in rows]


def find_user(engine: Engine, token: str) -> ApiUser | None:
    """Return the active user a token belongs to, or None."""
    with Session(engine) as session:
        return session.exec(select(ApiUser).where(ApiUser.token_sha256 == token_digest(token),
                                                  col(ApiUser.revoked_at).is_(None))).first()


def active_users(engine: Engine) -> int:
    """Count the users whose token works: while there is one, the database's servers require tokens."""
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(ApiUser)
                                .where(col(ApiUser.revoked_at).is_(None))).one())


def has_active_users(engine: Engine) -> bool:
    """Tell whether a request needs a token here: some user is not revoked (revoking the last one opens it again)."""
    with Session(engine) as session:
        return session.exec(select(ApiUser.id).where(col(ApiUser.revoked_at).is_(None)).limit(1)).first() is not None


# What was made where no token was needed: the tokenless server's principal, and the command line (no owner).
OWNED: dict[str, type[Job] | type[ChatThread] | type[Batch]] = {"jobs": Job, "threads": ChatThread, "batches": Batch}


def _made_locally(model: type[Job | ChatThread | Batch]) -> ColumnElement[bool]:
    return or_(col(model.owner).is_(None), func.lower(col(model.owner)).in_(RESERVED_NAMES))


def local_jobs(engine: Engine) -> int:
    """Count the jobs made without a token ('local' or the command line's): with tokens needed, only admins see them."""
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(Job).where(_made_locally(Job))).one())


def adopt_local(engine: Engine, name: str) -> dict[str, int]:
    """Hand every job, chat thread and batch made without a token to an active user; return how many of each."""
    with Session(engine) as session:
        user = session.exec(select(ApiUser).where(ApiUser.name == name, col(ApiUser.revoked_at).is_(None))).first()
        if user is None:
            raise UserError(f"no active user {name}")
        moved = {kind: cast(CursorResult[Any], session.execute(
            update(model).where(_made_locally(model)).values(owner=name))).rowcount for kind, model in OWNED.items()}
        session.commit()  # one transaction: a job and the thread that shows it move together
    return moved
