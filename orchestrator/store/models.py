"""ORM classes for the store's writes, mapped onto the Core tables of schema.py (the one
definition of the schema). Reads never import this module: see schema.py."""

from __future__ import annotations

from sqlalchemy.orm import DeclarativeBase

from wirewise.orchestrator.store import schema


class Base(DeclarativeBase):
    metadata = schema.METADATA


class NodeRow(Base):
    __table__ = schema.NODES


class TopologyRow(Base):
    __table__ = schema.TOPOLOGIES


class NodeTopologyRow(Base):
    __table__ = schema.NODE_TOPOLOGIES


class CampaignRow(Base):
    __table__ = schema.CAMPAIGNS


class TaskRow(Base):
    __table__ = schema.TASKS


class ResultRow(Base):
    __table__ = schema.RESULTS


class PlacedJobRow(Base):
    __table__ = schema.PLACED_JOBS
