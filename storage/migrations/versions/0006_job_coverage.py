"""Coverage: which shapes a verified job's kernel was checked on (spec, or reduced).

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None


def upgrade() -> None:
    """Add job.coverage (existing rows: none, their reports say what ran)."""
    with op.batch_alter_table("job") as batch:
        batch.add_column(sa.Column("coverage", sa.String(), nullable=True))


def downgrade() -> None:
    """Drop job.coverage."""
    with op.batch_alter_table("job") as batch:
        batch.drop_column("coverage")
