"""indexes for each node's latest check and newest actions: (node, checked_at), (node, at)

`wirewise fleet status` shows each node's latest check and the newest actions of its trail,
`fleet retest` and `fleet resume` its latest drain and re-test; store/health.py picks them in
the database, one probe per node on these indexes. They replace the indexes on node alone,
which they cover.

Revision ID: 0009
Revises: 0008
"""
from alembic import op


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

INDEXES = {  # table -> (the index on node alone, the one on node and time that replaces it)
    'node_checks': ('ix_node_checks_node', 'ix_node_checks_node_checked_at', ['node', 'checked_at']),
    'fleet_actions': ('ix_fleet_actions_node', 'ix_fleet_actions_node_at', ['node', 'at']),
}


def upgrade() -> None:
    for table, (old, new, columns) in INDEXES.items():
        op.create_index(new, table, columns, unique=False)
        op.drop_index(old, table_name=table)


def downgrade() -> None:
    for table, (old, new, columns) in INDEXES.items():
        op.create_index(old, table, [columns[0]], unique=False)
        op.drop_index(new, table_name=table)
