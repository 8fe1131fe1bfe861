"""Whether a process of this machine is gone: how a claim left by a dead process (a worker's
job, an idempotent request, a streaming answer) is told from one still being worked on."""

from __future__ import annotations

import os


def gone(pid: int) -> bool:
    """True only when no process `pid` exists here (one we may not signal is alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
