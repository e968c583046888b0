"""Checkpoints of a workspace, taken around every run that may change it, kept in a git
object store of the daemon's own (actors/checkpoints/store.py); what a run changed, and
putting it back (actors/checkpoints/history.py decides which files, with no I/O)."""
