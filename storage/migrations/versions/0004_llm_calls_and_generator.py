"""Which generator a job used; the LLM calls of each job (tokens, latency, outcome).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None


def upgrade() -> None:
    """Add job.generator (existing rows: offline); create llmcall."""
    with op.batch_alter_table("job") as batch:
        batch.add_column(sa.Column("generator", sa.String(), nullable=False, server_default="offline"))
    op.create_table(
        "llmcall",
        sa.Column("stage", sa.String(), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("response_format", sa.String(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("error", sa.String(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uid", sa.String(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["job.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("uid"),
    )
    op.create_index("ix_llmcall_job_id", "llmcall", ["job_id"])


def downgrade() -> None:
    """Drop llmcall and job.generator."""
    op.drop_index("ix_llmcall_job_id", table_name="llmcall")
    op.drop_table("llmcall")
    with op.batch_alter_table("job") as batch:
        batch.drop_column("generator")
