"""index for one collective case on one wiring since a date: (fingerprint, op, bytes, started_at)

`wirewise results --fingerprint F --op OP --bytes N --since D` (and report's and compare's
filters of the same fields) read one case of one node type over the whole fleet. The index on
(fingerprint, op, bytes) found the case but not the date: at 12,500 nodes with 20 sweeps stored
it visited 62,690 rows for the 12,538 since D (docs/scale.md, issue 33: 7.0x `--help` at 10
million results on SQLite). With the start time last, the read is one range of the index. It
replaces the index on (fingerprint, op, bytes), which it covers.

Revision ID: 0016
Revises: 0015
"""
from alembic import op


revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None

NAME = 'ix_results_collective'
OLD, NEW = ['fingerprint', 'op', 'bytes'], ['fingerprint', 'op', 'bytes', 'started_at']


def upgrade() -> None:
    op.drop_index(NAME, table_name='results')
    op.create_index(NAME, 'results', NEW, unique=False)


def downgrade() -> None:
    op.drop_index(NAME, table_name='results')
    op.create_index(NAME, 'results', OLD, unique=False)
