"""results.gpu_count allows NULL: an imported nccl-tests log that shows no rank count

An excerpt of a log (the rows without the `#  Rank N ...` lines) does not say how many GPUs
ran; it was stored as 0 GPUs, which every query reads as a CPU run. NULL is unknown: such a
run stays among the GPU runs, `results` shows its GPU count as unknown, and `--gpus N` never
matches it (wirewise.orchestrator.record.nccl_tests).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 20:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('results', schema=None) as batch_op:
        batch_op.alter_column('gpu_count', existing_type=sa.Integer(), nullable=True)


def downgrade() -> None:
    op.execute("UPDATE results SET gpu_count = 0 WHERE gpu_count IS NULL")
    with op.batch_alter_table('results', schema=None) as batch_op:
        batch_op.alter_column('gpu_count', existing_type=sa.Integer(), nullable=False)
