"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-29 15:42:58.984614
"""
from alembic import op
import sqlalchemy as sa


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('campaigns',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('spec', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    op.create_table('nodes',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    op.create_table('results',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('record_id', sa.String(length=64), nullable=False),
    sa.Column('task_id', sa.String(length=128), nullable=True),
    sa.Column('campaign', sa.String(length=255), nullable=True),
    sa.Column('workload', sa.String(length=16), nullable=False),
    sa.Column('source', sa.String(length=16), nullable=False),
    sa.Column('params', sa.JSON(), nullable=False),
    sa.Column('node', sa.String(length=255), nullable=True),
    sa.Column('gpus', sa.JSON(), nullable=False),
    sa.Column('gpu_count', sa.Integer(), nullable=False),
    sa.Column('fingerprint', sa.String(length=64), nullable=True),
    sa.Column('fabric', sa.String(length=32), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('versions', sa.JSON(), nullable=False),
    sa.Column('env', sa.JSON(), nullable=False),
    sa.Column('op', sa.String(length=32), nullable=True),
    sa.Column('bytes', sa.BigInteger(), nullable=True),
    sa.Column('count', sa.BigInteger(), nullable=True),
    sa.Column('dtype', sa.String(length=16), nullable=True),
    sa.Column('in_place', sa.Boolean(), nullable=True),
    sa.Column('time_us', sa.Double(), nullable=True),
    sa.Column('algbw_gbs', sa.Double(), nullable=True),
    sa.Column('busbw_gbs', sa.Double(), nullable=True),
    sa.Column('wrong', sa.BigInteger(), nullable=True),
    sa.Column('model', sa.String(length=255), nullable=True),
    sa.Column('strategy', sa.String(length=32), nullable=True),
    sa.Column('world_size', sa.Integer(), nullable=True),
    sa.Column('micro_batch', sa.Integer(), nullable=True),
    sa.Column('seq_len', sa.Integer(), nullable=True),
    sa.Column('step_time_s', sa.Double(), nullable=True),
    sa.Column('samples_per_s', sa.Double(), nullable=True),
    sa.Column('tokens_per_s', sa.Double(), nullable=True),
    sa.Column('peak_mem_bytes', sa.JSON(), nullable=True),
    sa.Column('model_state_bytes', sa.JSON(), nullable=True),
    sa.Column('mfu', sa.Double(), nullable=True),
    sa.Column('extra', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('record_id')
    )
    with op.batch_alter_table('results', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_results_campaign'), ['campaign'], unique=False)
        batch_op.create_index('ix_results_collective', ['fingerprint', 'op', 'bytes'], unique=False)
        batch_op.create_index(batch_op.f('ix_results_ended_at'), ['ended_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_results_fabric'), ['fabric'], unique=False)
        batch_op.create_index(batch_op.f('ix_results_fingerprint'), ['fingerprint'], unique=False)
        batch_op.create_index(batch_op.f('ix_results_gpu_count'), ['gpu_count'], unique=False)
        batch_op.create_index(batch_op.f('ix_results_model'), ['model'], unique=False)
        batch_op.create_index(batch_op.f('ix_results_op'), ['op'], unique=False)
        batch_op.create_index(batch_op.f('ix_results_status'), ['status'], unique=False)
        batch_op.create_index(batch_op.f('ix_results_strategy'), ['strategy'], unique=False)
        batch_op.create_index(batch_op.f('ix_results_task_id'), ['task_id'], unique=False)
        batch_op.create_index('ix_results_train', ['fingerprint', 'model', 'strategy', 'gpu_count'], unique=False)
        batch_op.create_index(batch_op.f('ix_results_workload'), ['workload'], unique=False)

    op.create_table('topologies',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('fingerprint', sa.String(length=64), nullable=False),
    sa.Column('fabric', sa.String(length=32), nullable=False),
    sa.Column('switched', sa.Boolean(), nullable=True),
    sa.Column('gpu_count', sa.Integer(), nullable=False),
    sa.Column('gpu_model', sa.String(length=128), nullable=True),
    sa.Column('parsed', sa.JSON(), nullable=False),
    sa.Column('raw_text', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('fingerprint')
    )
    with op.batch_alter_table('topologies', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_topologies_fabric'), ['fabric'], unique=False)

    op.create_table('node_topologies',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('node_id', sa.Integer(), nullable=False),
    sa.Column('topology_id', sa.Integer(), nullable=False),
    sa.Column('details', sa.JSON(), nullable=False),
    sa.Column('first_seen', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_seen', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['node_id'], ['nodes.id'], ),
    sa.ForeignKeyConstraint(['topology_id'], ['topologies.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('node_id', 'topology_id')
    )
    op.create_table('tasks',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=128), nullable=False),
    sa.Column('campaign_id', sa.Integer(), nullable=True),
    sa.Column('workload', sa.String(length=32), nullable=False),
    sa.Column('params', sa.JSON(), nullable=False),
    sa.Column('gpus', sa.JSON(), nullable=False),
    sa.Column('node', sa.String(length=255), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('slurm_job_id', sa.String(length=64), nullable=True),
    sa.Column('slurm_array_id', sa.String(length=64), nullable=True),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['campaign_id'], ['campaigns.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('key')
    )
    with op.batch_alter_table('tasks', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_tasks_campaign_id'), ['campaign_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_tasks_status'), ['status'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('tasks', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_tasks_status'))
        batch_op.drop_index(batch_op.f('ix_tasks_campaign_id'))

    op.drop_table('tasks')
    op.drop_table('node_topologies')
    with op.batch_alter_table('topologies', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_topologies_fabric'))

    op.drop_table('topologies')
    with op.batch_alter_table('results', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_results_workload'))
        batch_op.drop_index('ix_results_train')
        batch_op.drop_index(batch_op.f('ix_results_task_id'))
        batch_op.drop_index(batch_op.f('ix_results_strategy'))
        batch_op.drop_index(batch_op.f('ix_results_status'))
        batch_op.drop_index(batch_op.f('ix_results_op'))
        batch_op.drop_index(batch_op.f('ix_results_model'))
        batch_op.drop_index(batch_op.f('ix_results_gpu_count'))
        batch_op.drop_index(batch_op.f('ix_results_fingerprint'))
        batch_op.drop_index(batch_op.f('ix_results_fabric'))
        batch_op.drop_index(batch_op.f('ix_results_ended_at'))
        batch_op.drop_index('ix_results_collective')
        batch_op.drop_index(batch_op.f('ix_results_campaign'))

    op.drop_table('results')
    op.drop_table('nodes')
    op.drop_table('campaigns')
