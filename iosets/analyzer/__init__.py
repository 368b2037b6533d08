"""Analyzer: traces (Darshan, block traces, ops tables) into the jobs table."""

from ._ops import OPS_SCHEMA, read_ops, write_ops

__all__ = ["OPS_SCHEMA", "read_ops", "write_ops"]
