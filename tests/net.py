"""Loopback helpers for tests that start a server of their own."""

from __future__ import annotations

import socket
import subprocess
import time


def free_port() -> int:
    """A port nothing listens on right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def wait_for_port(port: int, *, timeout: float, process: subprocess.Popen | None = None) -> None:
    """Block until something listens on `port`; fail loudly if `process` dies or time runs out."""
    deadline = time.monotonic() + timeout
    while not listening(port):
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode} before listening")
        if time.monotonic() > deadline:
            raise AssertionError(f"nothing listened on port {port} within {timeout} s")
        time.sleep(0.2)
