"""The memory's JSON API under /api/memory/."""
