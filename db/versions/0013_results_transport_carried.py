"""the transport a run's NCCL connections used, beside the one it asked for

A result's `transport_carried` is what NCCL's INFO lines show its connections used
(wirewise.nccl_info: "P2P/CUMEM", "NVLS+P2P/IPC", "P2P/IPC+NET/IB/GDRDMA", "local"), read by
the compute side from each rank's NCCL_DEBUG_FILE and by `import nccl-tests` from the log. It is
an observation, not part of the case (wirewise.case.NOT_CASE). Rows stored before did not read
it: NULL, unknown.

Revision ID: 0013
Revises: 0012
"""
from alembic import op
import sqlalchemy as sa


revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('results', schema=None) as batch_op:
        batch_op.add_column(sa.Column('transport_carried', sa.String(length=128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('results', schema=None) as batch_op:
        batch_op.drop_column('transport_carried')
