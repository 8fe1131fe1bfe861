"""The two failures a tool reports to its caller, each as a one-line message.

Anything else a tool raises is a bug or a broken part: the caller gets "memory
unavailable: internal error" and the details go to the log (never a path or a traceback).
"""


class InputError(ValueError):
    """A caller mistake; the message names the argument and is shown to the caller as is."""


class MemoryUnavailable(RuntimeError):
    """The memory cannot serve this call; the message is safe to show to any user."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"memory unavailable: {reason}")
        self.reason = reason
