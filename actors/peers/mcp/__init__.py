"""MCP servers: their configuration (config.py), one actor per server (servers.py) and the
manager of them all (manager.py); a remote server's HTTP session (remote.py, with sse.py's
event reader) and what a server lists besides tools (extras.py)."""
