"""Slot for ``iosets report``: write the offline HTML report of a replay (``iosets.report``).

No command is registered yet; it arrives with the report room, which renders the same frames
(jobs, metrics, rankings) that the commands' tables show.
"""
