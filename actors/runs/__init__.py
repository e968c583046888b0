"""Runs: what works one message of a conversation. The run protocol and request
(base.py), what a run needs from the daemon (env.py), the answer it streams
(streaming.py), a run by another agent over ACP (acp.py) and the built-in agent (agent/)."""
