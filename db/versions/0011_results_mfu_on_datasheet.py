"""every stored training MFU on one basis, the datasheet's: like is pooled with like

A record's `mfu` is taken against the GPU's datasheet dense bf16 peak (wirewise.record
MFU_BASIS). Records stored before took it against WIREWISE_PEAK_TFLOPS where that was set
(their extra.peak_source names it), and results, compare and report pooled those with the
datasheet's. This rewrites those rows as a record read today is (wirewise.record
mfu_on_datasheet): the datasheet's MFU, which they carried in extra.mfu_datasheet, becomes
mfu, and the measured-peak figures move to their own names in extra. Only their MFU and extra
change; the case columns do not depend on them.

Revision ID: 0011
Revises: 0010
"""
from alembic import op
import sqlalchemy as sa

from wirewise.record import PEAK_TFLOPS, mfu_on_datasheet  # a migration imports no settings: record holds the variable


revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

RESULTS = sa.table('results', sa.column('id', sa.Integer), sa.column('workload', sa.String),
                   sa.column('mfu', sa.Float), sa.column('extra', sa.JSON))


def upgrade() -> None:
    connection = op.get_bind()
    taken = sa.select(RESULTS.c.id, RESULTS.c.mfu, RESULTS.c.extra).where(
        RESULTS.c.workload == 'train', RESULTS.c.mfu.is_not(None),
        sa.cast(RESULTS.c.extra, sa.Text).like(f'%{PEAK_TFLOPS.name}%'))
    rows = []
    for row_id, mfu, extra in connection.execute(taken):
        new_mfu, new_extra = mfu_on_datasheet(mfu, extra)
        if new_extra is not extra:
            rows.append({'row_id': row_id, 'new_mfu': new_mfu, 'new_extra': new_extra})
    if rows:
        connection.execute(
            RESULTS.update().where(RESULTS.c.id == sa.bindparam('row_id'))
            .values(mfu=sa.bindparam('new_mfu'), extra=sa.bindparam('new_extra', type_=sa.JSON)),
            rows,
        )


def downgrade() -> None:
    pass  # the rows keep both figures under their names: nothing to undo
