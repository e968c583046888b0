"""Other coding agents over the Agent Client Protocol: the agents' programs (agents.py) and
what they send, read into items (updates.py)."""
