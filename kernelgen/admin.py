"""`kernelgen users`: add, list and revoke the API's users (tokens kept as SHA-256 digests in the job database)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from kernelgen.settings import Settings
from storage.db import make_engine
from storage.users import UserError, add_user, list_users, revoke_user

users_app = typer.Typer(help="Manage the API's users: each has a bearer token and sees only its own jobs.",
                        no_args_is_help=True)


@users_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="The user's name (letters, digits, '_', '.', '-').")],
    admin: Annotated[bool, typer.Option("--admin", help="Let the user see and cancel every job.")] = False,
) -> None:
    """Add a user (or re-issue a revoked one) and print its token once: it is not stored, only its digest."""
    engine = make_engine(Settings().database_url)
    try:
        token = add_user(engine, name, admin=admin)
    except UserError as exc:
        Console(stderr=True).print(f"[red]{exc}[/]", highlight=False)
        raise typer.Exit(1) from None
    finally:
        engine.dispose()
    Console(stderr=True).print(f"user {name}{' (admin)' if admin else ''} added; its token (shown once):",
                               highlight=False)
    typer.echo(token)


@users_app.command("revoke")
def revoke(name: Annotated[str, typer.Argument(help="The user whose token stops working.")]) -> None:
    """Revoke a user's token; the user's jobs stay."""
    engine = make_engine(Settings().database_url)
    try:
        revoke_user(engine, name)
    except UserError as exc:
        Console(stderr=True).print(f"[red]{exc}[/]", highlight=False)
        raise typer.Exit(1) from None
    finally:
        engine.dispose()
    typer.echo(f"user {name} revoked")


@users_app.command("list")
def list_() -> None:
    """List the users, with their role and whether they are revoked."""
    engine = make_engine(Settings().database_url)
    try:
        users = list_users(engine)
    finally:
        engine.dispose()
    table = Table("name", "role", "created", "revoked")
    for user in users:
        table.add_row(user.name, "admin" if user.admin else "user", f"{user.created_at:%Y-%m-%d %H:%M}",
                      f"{user.revoked_at:%Y-%m-%d %H:%M}" if user.revoked_at else "")
    Console(width=120).print(table)
