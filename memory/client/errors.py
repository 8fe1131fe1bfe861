"""What can go wrong when the app asks the memory for something.

Every error the memory service raises is a MemoryServiceError, so callers that only want
"did it work" catch one class; views map each subclass to one HTTP status.

`message` is what a user may read: one line, never a path, a PID, an exception or a
traceback ("memory unavailable", or the server's own one-line "memory unavailable: …"
reasons). What staff need to know goes in `detail`, which only logs, the admin's memory
health page and `manage.py memory_stats` show.
"""

from __future__ import annotations


class MemoryServiceError(Exception):
    """Base class: the memory could not do what was asked."""

    status = "error"
    default_message = "memory error"

    def __init__(self, message: str = "", *, detail: str = ""):
        super().__init__(message)
        self.message = message or self.default_message
        self.detail = detail

    def __str__(self) -> str:
        return self.message

    @property
    def sentence(self) -> str:
        """The message as a sentence for a page or a tool result: "Memory unavailable."."""
        return sentence(self.message)


def sentence(text: str) -> str:
    """ "memory unavailable" -> "Memory unavailable." ("" stays "")."""
    text = text[:1].upper() + text[1:]
    return text if not text or text.endswith((".", "!", "?")) else text + "."


class MemoryDisabled(MemoryServiceError):
    """Memory is disabled on this server (MCP_MEMORY_ENABLED=false)."""

    status = "disabled"
    default_message = "memory is disabled on this server"


class MemoryOff(MemoryServiceError):
    """The user turned their memory off (MemorySettings.memory_enabled)."""

    status = "off"
    default_message = "memory is off for this account"


class MemoryUnavailable(MemoryServiceError):
    """The memory server is unreachable: not started, dead, or too slow to answer."""

    status = "unavailable"
    default_message = "memory unavailable"

    def __init__(self, message: str = "", *, retry_after: float = 5.0, detail: str = ""):
        super().__init__(message, detail=detail)
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
    default_message = "no such memory"


class MemoryToolError(MemoryServiceError):
    """The memory server refused a call (an MCP tool error) and said why.

    Raised by the MCP client only; services turn it into MemoryInputError or
    MemoryNotFound, which is what their callers handle.
    """

    status = "tool_error"

    def __init__(self, tool: str, message: str):
        super().__init__(message)
        self.tool = tool


class MemoryBusy(MemoryServiceError):
    """Over one of the user's fair shares (memory/client/limits.py): nothing was sent or stored;
    ask again after `retry_after` seconds. `limit` names the setting."""

    status = "too_many"
    default_message = "too many requests"

    def __init__(self, message: str = "", *, limit: str = "", retry_after: float = 1.0):
        super().__init__(message)
        self.limit = limit
        self.retry_after = max(1, round(retry_after))
