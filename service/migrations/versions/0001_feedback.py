"""Answers, comparisons and demonstrations.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None


def upgrade() -> None:
    # SQLite files written before migrations existed already hold these tables, with the
    # same columns: they are adopted as they are.
    existing = set(sa.inspect(op.get_bind()).get_table_names())
    if "answers" not in existing:
        op.create_table(
            "answers",
            sa.Column("id", sa.Text, primary_key=True),
            sa.Column("question", sa.Text, nullable=False),
            sa.Column("created", sa.Float, nullable=False),
            sa.Column("result", sa.Text, nullable=False),
        )
    if "comparisons" not in existing:
        op.create_table(
            "comparisons",
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("answer_id", sa.Text, sa.ForeignKey("answers.id"), nullable=False),
            sa.Column("a", sa.Integer, nullable=False),
            sa.Column("b", sa.Integer, nullable=False),
            sa.Column("preference", sa.Text, nullable=False),
            sa.Column("note", sa.Text),
            sa.Column("created", sa.Float, nullable=False),
            sa.CheckConstraint("preference IN ('a', 'b', 'tie')", name="preference_kind"),
        )
    if "demonstrations" not in existing:
        op.create_table(
            "demonstrations",
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("question", sa.Text, nullable=False),
            sa.Column("episode", sa.Text, nullable=False),
            sa.Column("created", sa.Float, nullable=False),
        )
