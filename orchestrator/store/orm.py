"""ORM classes mapped onto the tables of schema.py that the tests query with the ORM
(`with store.session() as s: s.scalars(select(ResultRow))`). wirewise itself writes Core
statements and reads through read.py: no command imports this module."""

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


class ResultRow(Base):
    __table__ = schema.RESULTS


class PlacedJobRow(Base):
    __table__ = schema.PLACED_JOBS

