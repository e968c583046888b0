"""The daemon's actors: the engine's turn line, conversations and their runs, tools.

Nothing in this package knows about HTTP; `bmoe_daemon` translates requests into
messages to these actors and their broadcasts into events.
"""
