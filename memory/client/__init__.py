"""The memory server as the app calls it: the one MCP client, one service function per tool, the
checks and errors, the user's switches, fair shares, bulk jobs."""
