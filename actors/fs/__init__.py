"""The file system as every part of the daemon touches it: paths confined to a workspace
(paths.py) and files replaced whole (atomic.py)."""
