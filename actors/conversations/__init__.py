"""The conversations' actors: one per conversation (actor.py) and the hub that supervises
them and holds the workspaces (hub.py)."""
