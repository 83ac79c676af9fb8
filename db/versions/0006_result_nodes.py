"""every node a result ran on: node_count, nodes and node_fingerprints (multi-node tasks)

Rows stored before are single-node results: one node, the one in `node` (their lists stay
empty). Imported nccl-tests rows name the hosts of their rank lines, and leave the count
NULL where the log does not show every rank line.

Revision ID: 0006
Revises: 0005
"""
from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('results', schema=None) as batch_op:
        batch_op.add_column(sa.Column('node_count', sa.Integer(), nullable=True, server_default='1'))
        batch_op.add_column(sa.Column('nodes', sa.JSON(), nullable=False, server_default='[]'))
        batch_op.add_column(sa.Column('node_fingerprints', sa.JSON(), nullable=False, server_default='[]'))


def downgrade() -> None:
    with op.batch_alter_table('results', schema=None) as batch_op:
        batch_op.drop_column('node_fingerprints')
        batch_op.drop_column('nodes')
        batch_op.drop_column('node_count')
