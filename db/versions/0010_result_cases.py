"""the case of every result as columns and an indexed key, filled for the rows stored before

The one case definition (wirewise.case) is computed when a record is stored
(wirewise.orchestrator.store.cases): each derived field a column, `case_key` its key, so that
results, compare, report, the baselines and placement group by one key in SQL. This adds the
columns and indexes, and fills them for the results already stored: each row's case derived in
Python by the same code a new record goes through (refill_cases), in id ranges, with the NVLink
groups of the wirings stored so far for its geometry.

The columns are named here as they were at this revision; a later case field adds its own
column in its own migration and calls refill_cases again, which writes the columns present.

Revision ID: 0010
Revises: 0009
"""
from alembic import op
import sqlalchemy as sa

from wirewise.orchestrator.store.cases import refill_cases


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

COLUMNS = [
    sa.Column('redop', sa.String(length=16), nullable=True),
    sa.Column('root', sa.Integer(), nullable=True),
    sa.Column('cuda_graph', sa.Boolean(), nullable=True),
    sa.Column('transport', sa.String(length=16), nullable=True),
    sa.Column('device', sa.String(length=8), nullable=True),
    sa.Column('ranks', sa.Integer(), nullable=True),
    sa.Column('ranks_per_node', sa.Integer(), nullable=True),
    sa.Column('geometry', sa.String(length=16), nullable=True),
    sa.Column('precision', sa.String(length=16), nullable=True),
    sa.Column('engine', sa.String(length=16), nullable=True),
    sa.Column('compile', sa.Boolean(), nullable=True),
    sa.Column('placement', sa.String(length=64), nullable=True),
    sa.Column('case_key', sa.String(length=32), nullable=True),
]
INDEXES = {
    'ix_results_case': ['case_key'],
    'ix_results_fingerprint_case': ['fingerprint', 'case_key'],
    'ix_results_placement': ['placement'],
}


def upgrade() -> None:
    for column in COLUMNS:
        op.add_column('results', column)
    refill_cases(op.get_bind())
    for name, columns in INDEXES.items():
        op.create_index(name, 'results', columns, unique=False)


def downgrade() -> None:
    for name in INDEXES:
        op.drop_index(name, table_name='results')
    with op.batch_alter_table('results', schema=None) as batch_op:
        for column in reversed(COLUMNS):
            batch_op.drop_column(column.name)
