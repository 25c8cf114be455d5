"""mcp: the MCP front end (tools and the stdio server), a peer of commands/."""
