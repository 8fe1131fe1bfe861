"""ikario_rag: a standalone MCP memory server (SQLite + FTS5 + Chroma + all-MiniLM-L6-v2)."""
