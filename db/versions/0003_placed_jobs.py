"""placed_jobs: commands submitted by `wirewise run` with their placement

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 04:45:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('placed_jobs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('slurm_job_id', sa.String(length=64), nullable=False),
    sa.Column('mode', sa.String(length=16), nullable=False),
    sa.Column('command', sa.JSON(), nullable=False),
    sa.Column('node', sa.String(length=255), nullable=True),
    sa.Column('requested_gpus', sa.Integer(), nullable=False),
    sa.Column('gpus', sa.JSON(), nullable=True),
    sa.Column('fingerprint', sa.String(length=64), nullable=True),
    sa.Column('fabric', sa.String(length=32), nullable=True),
    sa.Column('constraint', sa.String(length=255), nullable=True),
    sa.Column('predicted_busbw_gbs', sa.Double(), nullable=True),
    sa.Column('basis', sa.String(length=16), nullable=True),
    sa.Column('best_free_gpus', sa.JSON(), nullable=True),
    sa.Column('best_free_busbw_gbs', sa.Double(), nullable=True),
    sa.Column('model', sa.String(length=255), nullable=True),
    sa.Column('strategy', sa.String(length=32), nullable=True),
    sa.Column('warnings', sa.JSON(), nullable=False),
    sa.Column('folder', sa.Text(), nullable=False),
    sa.Column('submitted_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('placed_jobs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_placed_jobs_fingerprint'), ['fingerprint'], unique=False)
        batch_op.create_index(batch_op.f('ix_placed_jobs_slurm_job_id'), ['slurm_job_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_placed_jobs_submitted_at'), ['submitted_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('placed_jobs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_placed_jobs_submitted_at'))
        batch_op.drop_index(batch_op.f('ix_placed_jobs_slurm_job_id'))
        batch_op.drop_index(batch_op.f('ix_placed_jobs_fingerprint'))

    op.drop_table('placed_jobs')
