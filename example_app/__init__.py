"""A small bookshop whose REST endpoints are also MCP tools (see main.py)."""
