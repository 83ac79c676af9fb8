"""indexes for the results queries: fabric and case, node and start time, start time, campaign and case, source

`wirewise results --fabric F --op O --bytes S` and the report's figures read one fabric's
case; `--node N --since DATE` and `doctor` read a node's results by start time; `--since`
alone reads by start time; `--campaign C --workload train --model M` reads one campaign's
runs of a model; `--source` splits imported nccl-tests rows from wirewise's own.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 05:00:00
"""
from alembic import op


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

INDEXES = {
    "ix_results_fabric_case": ["fabric", "op", "bytes"],
    "ix_results_node_started": ["node", "started_at"],
    "ix_results_started_at": ["started_at"],
    "ix_results_campaign_case": ["campaign", "workload", "model"],
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
