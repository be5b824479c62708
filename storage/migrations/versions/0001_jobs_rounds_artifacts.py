"""Jobs, rounds and artifacts: the original schema.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None


def upgrade() -> None:
    """Create job, round and artifact."""
    op.create_table(
        "job",
        sa.Column("spec_text", sa.String(), nullable=False),
        sa.Column("op_name", sa.String(), nullable=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("device", sa.String(), nullable=True),
        sa.Column("out_dir", sa.String(), nullable=False),
        sa.Column("message", sa.String(), nullable=False),
        sa.Column("best_round", sa.Integer(), nullable=True),
        sa.Column("spec_json", sa.String(), nullable=True),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_job_op_name", "job", ["op_name"])
    op.create_index("ix_job_status", "job", ["status"])
    op.create_table(
        "round",
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("edit_type", sa.String(), nullable=False),
        sa.Column("config", sa.String(), nullable=False),
        sa.Column("reason", sa.String(), nullable=False),
        sa.Column("accuracy_status", sa.String(), nullable=False),
        sa.Column("performance_status", sa.String(), nullable=False),
        sa.Column("speedup", sa.Float(), nullable=True),
        sa.Column("pct_of_copy", sa.Float(), nullable=True),
        sa.Column("accepted", sa.Boolean(), nullable=False),
        sa.Column("verdict", sa.String(), nullable=False),
        sa.Column("figures_json", sa.String(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["job.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_round_job_id", "round", ["job_id"])
    op.create_table(
        "artifact",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("round_index", sa.Integer(), nullable=True),
        sa.Column("content", sa.String(), nullable=False),
        sa.Column("sha256", sa.String(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["job.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_artifact_job_id", "artifact", ["job_id"])


def downgrade() -> None:
    """Drop artifact, round and job."""
    op.drop_index("ix_artifact_job_id", table_name="artifact")
    op.drop_table("artifact")
    op.drop_index("ix_round_job_id", table_name="round")
    op.drop_table("round")
    op.drop_index("ix_job_status", table_name="job")
    op.drop_index("ix_job_op_name", table_name="job")
    op.drop_table("job")
