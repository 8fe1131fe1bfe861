"""What an operator reads when a memory command fails."""

from memory.client.errors import MemoryServiceError


def said(exc: MemoryServiceError) -> str:
    """The error's message and, for an operator, its detail: with no server reachable, why
    and how to start one (a user reads the message alone)."""
    return f"{exc.message} ({exc.detail})" if exc.detail else exc.message
