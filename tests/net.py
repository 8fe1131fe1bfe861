"""Loopback helpers for tests that start a server of their own.

A port the OS hands out is free only until somebody binds it: between `free_port()` and
the server's own bind, another test worker or another suite on the machine may take it.
Then our server exits (address in use) or, worse, something else answers on "our" port.
`serve_on_a_free_port` removes both: a server counts as up only when the listening socket
belongs to its own process (or a child), and a lost race starts it again on a new port.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

ATTEMPTS = 5  # lost races in a row before giving up (one is already rare)
_LISTEN = "0A"  # the TCP state /proc/net/tcp shows for a listening socket


class LostRace(Exception):
    """Something else took the port before our server bound it."""


def free_port() -> int:
    """A port nothing listens on right now (the OS picks it); see serve_on_a_free_port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _listening_inodes(port: int) -> set[str]:
    """Inodes of the sockets listening on `port` (any address, IPv4 or IPv6)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == _LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def _family(pid: int) -> set[int]:
    """`pid` and its descendants (a server may listen from a child it forked)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    family, todo = set(), [pid]
    while todo:
        current = todo.pop()
        family.add(current)
        todo.extend(children.get(current, []))
    return family


def _owns(pid: int, inodes: set[str]) -> bool:
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for member in _family(pid):
        fd_dir = f"/proc/{member}/fd"
        try:
            links = {os.readlink(f"{fd_dir}/{fd}") for fd in os.listdir(fd_dir)}
        except OSError:  # gone meanwhile, or a file descriptor closed under us
            continue
        if links & wanted:
            return True
    return False


def wait_for_port(port: int, *, timeout: float, process: subprocess.Popen) -> None:
    """Block until `process` itself listens on `port`. LostRace when another process holds
    the port; AssertionError when `process` dies or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        inodes = _listening_inodes(port)
        if inodes and _owns(process.pid, inodes):
            return
        if inodes and process.poll() is not None:
            raise LostRace(port)
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode} before listening")
        if inodes:
            # Somebody else listens there and ours has not bound: ours will fail to bind.
            raise LostRace(port)
        if time.monotonic() > deadline:
            raise AssertionError(f"nothing listened on port {port} within {timeout} s")
        time.sleep(0.2)


def stop(process: subprocess.Popen, *, grace: float = 10.0) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def serve_on_a_free_port(
    start: Callable[[int], subprocess.Popen], *, timeout: float
) -> tuple[subprocess.Popen, int]:
    """`start(port)` on a free port until the server listening there is the one started;
    returns (process, port). Whatever the race costs, never another process's server."""
    for _ in range(ATTEMPTS):
        port = free_port()
        process = start(port)
        try:
            wait_for_port(port, timeout=timeout, process=process)
        except LostRace:
            stop(process)
            continue
        except BaseException:
            stop(process)
            raise
        return process, port
    raise AssertionError(f"lost the race for a free port {ATTEMPTS} times in a row")
