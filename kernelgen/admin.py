"""`kernelgen users`: add, list, revoke and hand jobs to the API's users (token digests kept in the job database).

Users live in the job database, so what these commands change holds for every server on that database: the
default one (~/.kernelgen/) is shared by every `kernelgen serve` and command line of this account. Each command
says so when it switches the database between open (no token needed) and tokens required.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy import Engine, make_url

from kernelgen.settings import Settings
from storage.db import make_engine
from storage.users import UserError, active_users, add_user, adopt_local, list_users, local_jobs, revoke_user

users_app = typer.Typer(help="Manage the API's users: each has a bearer token and sees only its own jobs; while one "
                        "is active, every server on the database requires tokens.", no_args_is_help=True)
ADOPT = "--adopt-local-jobs"
DEFAULT_DATABASE_URL = Settings.model_fields["database_url"].default


def _database() -> str:
    """Name the database these commands change (without a password), and say when it is the shared default."""
    url = Settings().database_url
    shared = " (the default: every server and command line of this account without KERNELGEN_DATABASE_URL uses it)"
    return make_url(url).render_as_string(hide_password=True) + (shared if url == DEFAULT_DATABASE_URL else "")


def _say(text: str) -> None:
    Console(stderr=True, soft_wrap=True).print(text, highlight=False, markup=False)


def _fail(exc: UserError) -> typer.Exit:
    Console(stderr=True).print(f"[red]{exc}[/]", highlight=False)
    return typer.Exit(1)


def _adopted(engine: Engine, name: str) -> str:
    moved = adopt_local(engine, name)
    return (f"{moved['jobs']} job(s), {moved['threads']} chat thread(s) and {moved['batches']} batch(es) made "
            f"without a token now belong to {name}.")


@users_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="The user's name (letters, digits, '_', '.', '-').")],
    admin: Annotated[bool, typer.Option("--admin", help="Let the user see and cancel every job.")] = False,
    adopt: Annotated[bool, typer.Option(ADOPT, help="Hand the user the jobs, threads and batches made without a "
                                        "token (by 'local' or the command line).")] = False,
) -> None:
    """Add a user (or re-issue a revoked one) and print its token once: it is not stored, only its digest."""
    engine = make_engine(Settings().database_url)
    try:
        was_open = active_users(engine) == 0
        token = add_user(engine, name, admin=admin)
        earlier = local_jobs(engine)
        adopted = _adopted(engine, name) if adopt else ""
    except UserError as exc:
        raise _fail(exc) from None
    finally:
        engine.dispose()
    if was_open:
        _say(f"This database ({_database()}) now requires tokens: every `kernelgen serve` on it answers only "
             "requests that carry a user's token (or one of its KERNELGEN_API_TOKENS). `kernelgen users revoke` "
             "of the last user makes it open again.")
    if adopted:
        _say(adopted)
    elif was_open and earlier:
        _say(f"{earlier} earlier job(s) belong to 'local' or the command line: admins see them, {name}"
             f"{' too' if admin else ' does not'} (hand them over: kernelgen users adopt {name}, or add with {ADOPT}).")
    _say(f"user {name}{' (admin)' if admin else ''} added; its token (shown once):")
    typer.echo(token)


@users_app.command("adopt")
def adopt_(name: Annotated[str, typer.Argument(help="The active user who gets them.")]) -> None:
    """Hand an active user every job, chat thread and batch made without a token (by 'local' or the command line)."""
    engine = make_engine(Settings().database_url)
    try:
        typer.echo(_adopted(engine, name))
    except UserError as exc:
        raise _fail(exc) from None
    finally:
        engine.dispose()


@users_app.command("revoke")
def revoke(name: Annotated[str, typer.Argument(help="The user whose token stops working.")]) -> None:
    """Revoke a user's token; the user's jobs stay. Revoking the last active user makes the database open again."""
    engine = make_engine(Settings().database_url)
    try:
        revoke_user(engine, name)
        left = active_users(engine)
    except UserError as exc:
        raise _fail(exc) from None
    finally:
        engine.dispose()
    typer.echo(f"user {name} revoked")
    if left == 0:
        _say(f"No active user is left: this database ({_database()}) needs no token again. A server on it bound to "
             "loopback answers every request as 'local' (an admin, who sees every job); one bound to another "
             "address refuses every request until a user is added (KERNELGEN_API_TOKENS still apply where set).")


@users_app.command("list")
def list_() -> None:
    """List the users, with their role and whether they are revoked, and whether the database requires tokens."""
    engine = make_engine(Settings().database_url)
    try:
        users, active = list_users(engine), active_users(engine)
    finally:
        engine.dispose()
    table = Table("name", "role", "created", "revoked")
    for user in users:
        table.add_row(user.name, "admin" if user.admin else "user", f"{user.created_at:%Y-%m-%d %H:%M}",
                      f"{user.revoked_at:%Y-%m-%d %H:%M}" if user.revoked_at else "")
    Console(width=120).print(table)
    typer.echo(f"{_database()}: " + (f"tokens required ({active} active user(s))" if active else
                                     "open: no active user, no token needed (on loopback)"))
