"""fleet health: imported baselines, node checks and their findings, the audit trail of drains, re-tests and resumes

baselines holds what `wirewise baseline import` read (the history's own baselines are computed
from the results); node_checks one row per judgement of a node, findings the rules that fired
(open until judged again or re-tested); fleet_actions every drain, re-test and resume with its
evidence and who asked (issue 19).

Revision ID: 0007
Revises: 0006
"""
from alembic import op
import sqlalchemy as sa


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        'baselines',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('fingerprint', sa.String(length=64), nullable=False),
        sa.Column('workload', sa.String(length=16), nullable=False),
        sa.Column('case_key', sa.Text(), nullable=False),
        sa.Column('case', sa.JSON(), nullable=False),
        sa.Column('metric', sa.String(length=32), nullable=False),
        sa.Column('median', sa.Double(), nullable=False),
        sa.Column('spread', sa.Double(), nullable=False),
        sa.Column('results', sa.Integer(), nullable=False),
        sa.Column('nodes', sa.Integer(), nullable=False),
        sa.Column('sources', sa.JSON(), nullable=False),
        sa.Column('origin', sa.String(length=4096), nullable=False),
        sa.Column('imported_at', WHEN, nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('fingerprint', 'workload', 'case_key', 'origin'),
    )
    op.create_index(op.f('ix_baselines_fingerprint'), 'baselines', ['fingerprint'], unique=False)
    op.create_table(
        'node_checks',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('node', sa.String(length=255), nullable=False),
        sa.Column('source', sa.String(length=32), nullable=False),
        sa.Column('rules', sa.JSON(), nullable=False),
        sa.Column('healthy', sa.Boolean(), nullable=False),
        sa.Column('findings', sa.Integer(), nullable=False),
        sa.Column('checked_at', WHEN, nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index(op.f('ix_node_checks_checked_at'), 'node_checks', ['checked_at'], unique=False)
    op.create_index(op.f('ix_node_checks_node'), 'node_checks', ['node'], unique=False)
    op.create_table(
        'findings',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('node', sa.String(length=255), nullable=False),
        sa.Column('rule', sa.String(length=64), nullable=False),
        sa.Column('key', sa.Text(), nullable=False),
        sa.Column('metric', sa.String(length=255), nullable=False),
        sa.Column('delta', sa.String(length=64), nullable=False),
        sa.Column('evidence', sa.Text(), nullable=False),
        sa.Column('advice', sa.Text(), nullable=False),
        sa.Column('gpus', sa.JSON(), nullable=True),
        sa.Column('measurement', sa.JSON(), nullable=True),
        sa.Column('reference', sa.JSON(), nullable=False),
        sa.Column('source', sa.String(length=32), nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('confirmed', sa.Boolean(), nullable=False),
        sa.Column('opened_at', WHEN, nullable=False),
        sa.Column('updated_at', WHEN, nullable=False),
        sa.Column('cleared_at', WHEN, nullable=True),
        sa.Column('cleared_by', sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_findings_node_status', 'findings', ['node', 'status'], unique=False)
    op.create_table(
        'fleet_actions',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('node', sa.String(length=255), nullable=False),
        sa.Column('action', sa.String(length=16), nullable=False),
        sa.Column('outcome', sa.String(length=32), nullable=False),
        sa.Column('reason', sa.Text(), nullable=True),
        sa.Column('detail', sa.Text(), nullable=True),
        sa.Column('evidence', sa.JSON(), nullable=False),
        sa.Column('asked_by', sa.String(length=255), nullable=False),
        sa.Column('campaign', sa.String(length=255), nullable=True),
        sa.Column('at', WHEN, nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index(op.f('ix_fleet_actions_at'), 'fleet_actions', ['at'], unique=False)
    op.create_index(op.f('ix_fleet_actions_node'), 'fleet_actions', ['node'], unique=False)


def downgrade() -> None:
    for table, indexes in (
        ('fleet_actions', ['ix_fleet_actions_node', 'ix_fleet_actions_at']),
        ('findings', ['ix_findings_node_status']),
        ('node_checks', ['ix_node_checks_node', 'ix_node_checks_checked_at']),
        ('baselines', ['ix_baselines_fingerprint']),
    ):
        for index in indexes:
            op.drop_index(index, table_name=table)
        op.drop_table(table)
