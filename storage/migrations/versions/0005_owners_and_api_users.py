"""Owners: the principal of each job and the job behind each pattern's last change; the API users table.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None


def upgrade() -> None:
    """Add job.owner (existing rows: none, seen by admins only) and pattern provenance; create apiuser."""
    with op.batch_alter_table("job") as batch:
        batch.add_column(sa.Column("owner", sa.String(), nullable=True))
        batch.create_index("ix_job_owner", ["owner"])
    with op.batch_alter_table("optimizationpattern") as batch:
        batch.add_column(sa.Column("last_job_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("last_owner", sa.String(), nullable=True))
    op.create_table(
        "apiuser",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("admin", sa.Boolean(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_sha256", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
        sa.UniqueConstraint("token_sha256"),
    )


def downgrade() -> None:
    """Drop apiuser, the pattern provenance and job.owner."""
    op.drop_table("apiuser")
    with op.batch_alter_table("optimizationpattern") as batch:
        batch.drop_column("last_owner")
        batch.drop_column("last_job_id")
    with op.batch_alter_table("job") as batch:
        batch.drop_index("ix_job_owner")
        batch.drop_column("owner")
