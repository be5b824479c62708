"""One round per (job, index), and who runs each job.

Revision ID: 0009
Revises: 0008

A server killed while the log stage ran recorded that round again when the stage ran again after the restart: the
duplicates are removed (the latest row of each (job, index) is kept, as the job's state has that one) before the
unique constraint is added.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None


def upgrade() -> None:
    """Delete duplicate rounds, add uq_round_job_index; add job.runner (CLI rows marked as the command line's)."""
    op.execute(
        'DELETE FROM round WHERE id NOT IN (SELECT MAX(id) FROM round GROUP BY job_id, "index")'
    )
    with op.batch_alter_table("round") as batch:
        batch.create_unique_constraint("uq_round_job_index", ["job_id", "index"])
    with op.batch_alter_table("job") as batch:
        batch.add_column(sa.Column("runner", sa.String(), nullable=True))
    # The command line never stored options (the service always does): its old rows are its own, of no live process.
    op.execute("UPDATE job SET runner = 'cli:unknown:0' WHERE options_json = '{}'")


def downgrade() -> None:
    """Drop job.runner and the round key (duplicates removed stay removed)."""
    with op.batch_alter_table("job") as batch:
        batch.drop_column("runner")
    with op.batch_alter_table("round") as batch:
        batch.drop_constraint("uq_round_job_index", type_="unique")
