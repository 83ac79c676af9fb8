"""indexes for the results queries: fabric and case, node and time, start time, source

`wirewise results --fabric F --op O --bytes S` and the report's figures read one fabric's
case; `doctor` reads a node's latest results; `--since` reads by start time; `--source`
splits imported nccl-tests rows from wirewise's own.

Revision ID: 0003
Revises: 0004
Create Date: 2026-12-01 05:00:00
"""
from alembic import op


revision = '0003'
down_revision = '0004'
branch_labels = None
depends_on = None

INDEXES = {
    "ix_results_fabric_case": ["fabric", "op", "bytes"],
    "ix_results_node_ended": ["node", "ended_at"],
    "ix_results_started_at": ["started_at"],
    "ix_results_source": ["source"],
}


def upgrade() -> None:
    with op.batch_alter_table('results', schema=None) as batch_op:
        for name, columns in INDEXES.items():
            batch_op.create_index(name, columns, unique=False)


def downgrade() -> None:
    with op.batch_alter_table('results', schema=None) as batch_op:
        for name in INDEXES:
            batch_op.drop_index(name)
