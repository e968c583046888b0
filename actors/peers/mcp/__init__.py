"""MCP servers: their configuration (config.py) and one actor per server (servers.py)."""
