"""A user's notes folder as memory: where it may be read from, its rows, and the sync that keeps its
tagged notes in memory."""
