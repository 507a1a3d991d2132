"""Graded comparisons (soft label and ratings) and demonstrations recorded in full.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"


def upgrade() -> None:
    # Added as nullable columns: rows written before keep their meaning (a comparison's
    # label follows from its preference; a demonstration is posted commands).
    op.add_column("comparisons", sa.Column("label", sa.Float))
    op.add_column("comparisons", sa.Column("ratings", sa.Text))
    op.add_column(
        "demonstrations",
        sa.Column("format", sa.Text, nullable=False, server_default="commands"),
    )
