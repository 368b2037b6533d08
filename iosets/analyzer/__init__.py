"""Analyzer: traces (Darshan, block traces, ops tables) into the jobs table."""

from ._ops import read_ops, write_ops

__all__ = ["read_ops", "write_ops"]
