"""Job stage, options and cancel flag; the job's event stream.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None


def upgrade() -> None:
    """Add job.stage, job.options_json, job.cancel_requested (existing rows get the defaults); create jobevent."""
    with op.batch_alter_table("job") as batch:
        batch.add_column(sa.Column("stage", sa.String(), nullable=False, server_default=""))
        batch.add_column(sa.Column("options_json", sa.String(), nullable=False, server_default="{}"))
        batch.add_column(sa.Column("cancel_requested", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_table(
        "jobevent",
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("stage", sa.String(), nullable=False),
        sa.Column("message", sa.String(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["job.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("job_id", "seq", name="uq_job_event_seq"),
    )
    op.create_index("ix_jobevent_job_id", "jobevent", ["job_id"])


def downgrade() -> None:
    """Drop jobevent and the three job columns."""
    op.drop_index("ix_jobevent_job_id", table_name="jobevent")
    op.drop_table("jobevent")
    with op.batch_alter_table("job") as batch:
        batch.drop_column("cancel_requested")
        batch.drop_column("options_json")
        batch.drop_column("stage")
