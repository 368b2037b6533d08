"""Slot for ``iosets serve``: start the REST service (``iosets.api.create_app`` under uvicorn).

No command is registered yet; it arrives with the api room.
"""
