"""campaign tracking: where a campaign lives, how it was submitted, what each task is

Revision ID: 0002
Revises: 0001
"""
from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('campaigns', schema=None) as batch_op:
        batch_op.add_column(sa.Column('folder', sa.String(length=4096), nullable=True))
        batch_op.add_column(sa.Column('executor', sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column('slurm_arrays', sa.JSON(), nullable=False, server_default='[]'))
    with op.batch_alter_table('tasks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('placement', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('transport', sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column('repeat', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('bundle', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('tasks', schema=None) as batch_op:
        batch_op.drop_column('bundle')
        batch_op.drop_column('repeat')
        batch_op.drop_column('transport')
        batch_op.drop_column('placement')
    with op.batch_alter_table('campaigns', schema=None) as batch_op:
        batch_op.drop_column('slurm_arrays')
        batch_op.drop_column('executor')
        batch_op.drop_column('folder')
