"""index for a case's newest results on one wiring: (fingerprint, case_key, started_at)

The prolog judges what it just measured against the newest results of that case on the node's
wiring (wirewise.orchestrator.health.node.measured_history): one range of this index, read
newest first, whatever the fleet's history holds (issue 33). It replaces the index on
(fingerprint, case_key), which it covers.

Revision ID: 0012
Revises: 0011
"""
from alembic import op


revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None

OLD, NEW = 'ix_results_fingerprint_case', 'ix_results_fingerprint_case_started'


def upgrade() -> None:
    op.create_index(NEW, 'results', ['fingerprint', 'case_key', 'started_at'], unique=False)
    op.drop_index(OLD, table_name='results')


def downgrade() -> None:
    op.create_index(OLD, 'results', ['fingerprint', 'case_key'], unique=False)
    op.drop_index(NEW, table_name='results')
