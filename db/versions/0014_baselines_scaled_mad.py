"""an imported baseline's robust standard deviation is `scaled_mad`, not `spread`

`spread` is a relative range ((max - min) / median) in `results`, `compare` and `fleet pairs`;
the baselines stored 1.4826 x the median absolute deviation in the metric's unit (GB/s, or
tokens/s) under the same name. The column is renamed (values unchanged), as the baselines
files' version 3 renames the entry's key (version 2 files are still read, their `spread`
taken as `scaled_mad`).

Revision ID: 0014
Revises: 0013
"""
from alembic import op


revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('baselines', schema=None) as batch_op:
        batch_op.alter_column('spread', new_column_name='scaled_mad')


def downgrade() -> None:
    with op.batch_alter_table('baselines', schema=None) as batch_op:
        batch_op.alter_column('scaled_mad', new_column_name='spread')
