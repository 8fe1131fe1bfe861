"""What can go wrong when the app asks the memory for something.

Every error the memory service raises is a MemoryServiceError, so callers that only want
"did it work" catch one class; views map each subclass to one HTTP status.
"""

from __future__ import annotations


class MemoryServiceError(Exception):
    """Base class: the memory could not do what was asked."""

    status = "error"

    def __init__(self, message: str = ""):
        super().__init__(message)
        self.message = message or self.__doc__.strip().splitlines()[0]

    def __str__(self) -> str:
        return self.message


class MemoryDisabled(MemoryServiceError):
    """Memory is disabled on this server (MCP_MEMORY_ENABLED=false)."""

    status = "disabled"


class MemoryUnavailable(MemoryServiceError):
    """The memory server is unreachable: not started, dead, or too slow to answer."""

    status = "unavailable"

    def __init__(self, message: str = "", *, retry_after: float = 5.0):
        super().__init__(message)
        # Seconds until the client will have tried again; views send it as Retry-After.
        self.retry_after = max(1, round(retry_after))


class MemoryInputError(MemoryServiceError):
    """An argument was missing or wrong; nothing was sent or stored."""

    status = "invalid"

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class MemoryPaused(MemoryServiceError):
    """Memory is paused: memories are kept and recalled, but nothing new is saved."""

    status = "paused"


class MemoryNotFound(MemoryServiceError):
    """No memory with that id in this user's memory."""

    status = "not_found"


class MemoryToolError(MemoryServiceError):
    """The memory server refused a call (an MCP tool error) and said why.

    Raised by the MCP client only; services turn it into MemoryInputError or
    MemoryNotFound, which is what their callers handle.
    """

    status = "tool_error"

    def __init__(self, tool: str, message: str):
        super().__init__(message)
        self.tool = tool
