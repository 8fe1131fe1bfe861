"""The port helper the tests' own servers start with: a lost race is run again, and
another process's server on "our" port is never taken for ours."""

from __future__ import annotations

import socket
import subprocess
import sys

import httpx

from tests import net


def test_it_starts_again_on_a_new_port_when_another_process_took_the_first(monkeypatch, tmp_path):
    (tmp_path / "mine.txt").write_text("served by the test's own server")
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()  # what another worker's server looks like to us
    taken_port = taken.getsockname()[1]
    handed_out = iter([taken_port])  # the race lost: the first port is already taken
    real_free_port = net.free_port
    monkeypatch.setattr(net, "free_port", lambda: next(handed_out, None) or real_free_port())
    tried = []

    def start(port: int) -> subprocess.Popen:
        tried.append(port)
        return subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    try:
        process, port = net.serve_on_a_free_port(start, timeout=60)
        try:
            answer = httpx.get(f"http://127.0.0.1:{port}/mine.txt", timeout=30)
        finally:
            net.stop(process)
    finally:
        taken.close()

    assert tried[0] == taken_port and port != taken_port and tried[-1] == port
    assert answer.text == "served by the test's own server"
