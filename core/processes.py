"""Whether a process is gone: how a claim left by a dead process (a worker's job, an
idempotent request, a streaming answer) is told from one still being worked on.

A claim names its owner as `<host>:<pid>` (`owner()`; a worker adds `:<random>`), or keeps
the host and the pid apart; either way `dead()` tells. Only a process of this machine can be
seen dead: another host's owner is left to its heartbeat or its timeout.
"""

from __future__ import annotations

import os
import socket

# Host names are cut to this many characters wherever a claim stores one.
HOST_CHARS = 40


def this_host() -> str:
    return socket.gethostname()[:HOST_CHARS]


def owner() -> str:
    """This process as a claim's owner: `<host>:<pid>`."""
    return f"{this_host()}:{os.getpid()}"


def gone(pid: int) -> bool:
    """True only when no process `pid` exists here (one we may not signal is alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def dead(host: str | None, pid: int | str | None = None) -> bool:
    """The owner is a process of this host that exists no more. `host` alone may be a whole
    owner, `<host>:<pid>[:<anything>]`; another host's, or an unreadable one, is not dead."""
    if pid is None and host:
        host, _, rest = host.partition(":")
        pid = rest.partition(":")[0]
    if not host or (host or "")[:HOST_CHARS] != this_host():
        return False
    if isinstance(pid, str):
        pid = int(pid) if pid.isdigit() else None
    return bool(pid) and gone(pid)
