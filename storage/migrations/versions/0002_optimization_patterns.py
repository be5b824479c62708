"""The pattern store: one row per (category, device, bottleneck, change).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None


def upgrade() -> None:
    """Create optimizationpattern."""
    op.create_table(
        "optimizationpattern",
        sa.Column("category", sa.String(), nullable=False),
        sa.Column("device", sa.String(), nullable=False),
        sa.Column("bottleneck", sa.String(), nullable=False),
        sa.Column("change", sa.String(), nullable=False),
        sa.Column("edit_type", sa.String(), nullable=False),
        sa.Column("params_before", sa.String(), nullable=False),
        sa.Column("params_after", sa.String(), nullable=False),
        sa.Column("times_applied", sa.Integer(), nullable=False),
        sa.Column("times_helped", sa.Integer(), nullable=False),
        sa.Column("times_measured", sa.Integer(), nullable=False),
        sa.Column("mean_gain", sa.Float(), nullable=True),
        sa.Column("best_speedup", sa.Float(), nullable=True),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("category", "device", "bottleneck", "change", name="uq_pattern_key"),
    )
    op.create_index("ix_optimizationpattern_category", "optimizationpattern", ["category"])
    op.create_index("ix_optimizationpattern_device", "optimizationpattern", ["device"])


def downgrade() -> None:
    """Drop optimizationpattern."""
    op.drop_index("ix_optimizationpattern_device", table_name="optimizationpattern")
    op.drop_index("ix_optimizationpattern_category", table_name="optimizationpattern")
    op.drop_table("optimizationpattern")
