"""campaigns.slurm_arrays and tasks.slurm_array_id out; node_count and nodes filled for nccl-tests rows stored before 0006

The array ids were written and never read: campaign status, cancel and resume take a task's
Slurm array from its element (tasks.slurm_job_id, ARRAY_INDEX) and ask sacct, squeue and
scancel for those (wirewise.orchestrator.executor.slurm).

Rows imported from nccl-tests logs before 0006 kept their hosts in `extra`, and 0006 gave them
the column defaults (node_count 1, nodes empty). What each version of the importer wrote
(wirewise.orchestrator.record.nccl_tests):
- before 0005: extra.hosts, the hosts of the log's rank lines in order; no count, the rank lines
  read as every rank (gpu_count is their number): node_count is the number of hosts;
- at 0005: extra.hosts and extra.node_count, the count where every rank line was shown, else
  null (unknown), as the importer has written the column since 0006;
- a log without rank lines: extra.hosts empty, the node count unknown (NULL).
The fill copies extra.hosts to nodes and sets node_count from them, in id ranges of BATCH rows
(one statement each, the same on both databases); rows whose nodes are set already (imported
since 0006) are left as they are. `extra` keeps what the import wrote.

Downgrade: the columns come back filled from what is still known, each Slurm task's array from
its element id and each campaign's arrays from its tasks' (the arrays of attempts a resume
replaced are no longer known); the filled node counts stay (0007 reads them the same).

SQLite drops a column in place (ALTER TABLE DROP COLUMN, 3.35 and later): rebuilding the
campaigns table, as alembic's batch mode would, deletes the rows the tasks' foreign key points
to, which fails inside the one transaction a migration runs in (foreign keys are on, and
cannot be turned off within it). An older SQLite keeps the two columns, unused.

Revision ID: 0008
Revises: 0007
"""
from alembic import op
import sqlalchemy as sa


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

BATCH = 10_000  # results rows per UPDATE
DROPPED = (('campaigns', 'slurm_arrays'), ('tasks', 'slurm_array_id'))

# The fill, per dialect: extra.hosts -> nodes; extra.node_count where the row has one (a
# positive integer, else NULL), else the number of hosts (NULL for none).
FILL = {
    'sqlite': (
        "UPDATE results SET nodes = json_extract(extra, '$.hosts'), node_count = CASE"
        " WHEN json_type(extra, '$.node_count') = 'integer' AND json_extract(extra, '$.node_count') >= 1"
        " THEN json_extract(extra, '$.node_count')"
        " WHEN json_type(extra, '$.node_count') IS NULL THEN nullif(json_array_length(extra, '$.hosts'), 0) END"
        " WHERE source = 'nccl-tests' AND id >= :start AND id < :stop"
        " AND json_type(extra, '$.hosts') = 'array' AND json_array_length(nodes) = 0"
    ),
    'postgresql': (
        "UPDATE results SET nodes = extra -> 'hosts', node_count = CASE"
        " WHEN json_typeof(extra -> 'node_count') = 'number' AND extra ->> 'node_count' ~ '^[1-9][0-9]{0,8}$'"
        " THEN CAST(extra ->> 'node_count' AS INTEGER)"
        " WHEN extra -> 'node_count' IS NULL THEN nullif(json_array_length(extra -> 'hosts'), 0) END"
        " WHERE source = 'nccl-tests' AND id >= :start AND id < :stop"
        " AND json_typeof(extra -> 'hosts') = 'array' AND json_array_length(nodes) = 0"
    ),
}

# Downgrade: a Slurm task's array is its element id up to '_' (ARRAY_INDEX); a campaign's
# arrays, its tasks' in job id order.
ARRAY_OF = {
    'sqlite': "CASE WHEN instr(slurm_job_id, '_') > 0 THEN substr(slurm_job_id, 1, instr(slurm_job_id, '_') - 1) ELSE slurm_job_id END",
    'postgresql': "split_part(slurm_job_id, '_', 1)",
}
ARRAYS_OF_CAMPAIGN = {
    'sqlite': ("(SELECT json_group_array(a) FROM (SELECT DISTINCT slurm_array_id AS a FROM tasks"
               " WHERE tasks.campaign_id = campaigns.id AND slurm_array_id IS NOT NULL ORDER BY length(a), a))"),
    'postgresql': ("coalesce((SELECT json_agg(a ORDER BY length(a), a) FROM (SELECT DISTINCT slurm_array_id AS a FROM tasks"
                   " WHERE tasks.campaign_id = campaigns.id AND slurm_array_id IS NOT NULL) AS arrays), '[]')"),
}


def upgrade() -> None:
    bind = op.get_bind()
    fill = sa.text(FILL[bind.dialect.name])
    first, last = bind.execute(sa.text("SELECT min(id), max(id) FROM results WHERE source = 'nccl-tests'")).one()
    for start in range(first or 0, (last or -1) + 1, BATCH):
        bind.execute(fill, {'start': start, 'stop': start + BATCH})
    if _drops_in_place(bind):
        for table, column in DROPPED:
            op.drop_column(table, column)


def downgrade() -> None:
    bind = op.get_bind()
    present = {table: {c['name'] for c in sa.inspect(bind).get_columns(table)} for table, _ in DROPPED}
    if 'slurm_arrays' not in present['campaigns']:
        op.add_column('campaigns', sa.Column('slurm_arrays', sa.JSON(), nullable=False, server_default='[]'))
    if 'slurm_array_id' not in present['tasks']:
        op.add_column('tasks', sa.Column('slurm_array_id', sa.String(length=64), nullable=True))
    dialect = bind.dialect.name
    slurm = "campaign_id IN (SELECT id FROM campaigns WHERE executor = 'slurm')"
    op.execute(f"UPDATE tasks SET slurm_array_id = {ARRAY_OF[dialect]} WHERE slurm_job_id IS NOT NULL AND {slurm}")
    op.execute(f"UPDATE campaigns SET slurm_arrays = {ARRAYS_OF_CAMPAIGN[dialect]} WHERE executor = 'slurm'")


def _drops_in_place(bind) -> bool:
    """PostgreSQL, or a SQLite with ALTER TABLE DROP COLUMN (the module's docstring says why)."""
    return bind.dialect.name != 'sqlite' or bind.dialect.server_version_info >= (3, 35, 0)
