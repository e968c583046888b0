"""Programs the daemon speaks JSON-RPC to (jsonrpc.py, program.py): MCP servers (mcp/),
other coding agents over the Agent Client Protocol (acp/) and language servers (lsp/)."""
