"""the fabric between a result's nodes (`scope`) is a case field: a pair inside an NVLink domain
and a pair across domains are different cases

wirewise.case's `scope`: `node` for one node; over several, `nvlink-domain` when every node sits
in one multi-node NVLink domain (GB200/GB300 NVL72), else `network`, from the domains the nodes'
stored wirings reported; empty where a node's wiring is not stored. This adds the column and
derives every stored result's case again (its key changes: the case has one more field), as a
new record's is (refill_cases). The imported baselines' cases gain the field too: a one-node
case `node`; a multi-node one empty, since the file did not say which fabric it ran over (it
then matches only results whose scope cannot be told either).

Revision ID: 0015
Revises: 0014
"""
import json

from alembic import op
import sqlalchemy as sa

from wirewise.case import with_scope
from wirewise.orchestrator.store.cases import refill_cases


revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None

BASELINES = sa.table('baselines', sa.column('id', sa.Integer), sa.column('case', sa.JSON),
                     sa.column('case_key', sa.Text))


def upgrade() -> None:
    op.add_column('results', sa.Column('scope', sa.String(length=16), nullable=True))
    refill_cases(op.get_bind())
    _rewrite_baseline_cases(with_scope)


def downgrade() -> None:
    _rewrite_baseline_cases(lambda case: {k: v for k, v in case.items() if k != 'scope'})
    with op.batch_alter_table('results', schema=None) as batch_op:
        batch_op.drop_column('scope')


def _rewrite_baseline_cases(change) -> None:
    """Each stored baseline's case through `change`, its key (the case as sorted JSON) with it."""
    connection = op.get_bind()
    rows = []
    for row_id, case in connection.execute(sa.select(BASELINES.c.id, BASELINES.c.case)):
        case = json.loads(case) if isinstance(case, str) else case
        if isinstance(case, dict) and change(case) != case:
            new = change(case)
            rows.append({'row_id': row_id, 'new_case': new, 'new_key': json.dumps(new, sort_keys=True)})
    if rows:
        connection.execute(
            BASELINES.update().where(BASELINES.c.id == sa.bindparam('row_id'))
            .values(case=sa.bindparam('new_case', type_=sa.JSON), case_key=sa.bindparam('new_key')),
            rows,
        )
