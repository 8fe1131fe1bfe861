"""A missing or damaged model export: made once, by a process a killed server does not
take down with it; a truncated one is made again; what a killed export left is removed.

Runs real exports (torch) into a temporary model cache: minutes on a busy machine.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from ikario_rag import model
from tests.ikario_rag.stdio import ANSWER_WAIT, SERVER


def wait_for(condition, what: str, timeout: float = ANSWER_WAIT) -> None:
    """A bound on waiting for the export's own work, never an expectation of its speed."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout} s")
        time.sleep(0.5)


def test_a_killed_server_does_not_stop_the_export_and_a_damaged_one_is_made_again(
    tmp_path, spawn, monkeypatch
):
    cache = tmp_path / "cache"
    cache.mkdir()
    leftover = cache / "tmpab12.onnx.tmp"  # what an export killed before this left
    leftover.write_bytes(b"\0" * 4096)
    monkeypatch.setenv("IKARIO_MODEL_CACHE", str(cache))
    target = model.model_file()
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "IKARIO_INDEX_DIR": str(tmp_path / "i")}
    log = tmp_path / "server.log"

    # Started as the app's MCP client starts it (a session of its own), and killed as that
    # client kills a server that did not answer within its connect timeout: the whole group.
    server = subprocess.Popen(
        [sys.executable, str(SERVER)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
        env=environment,
        start_new_session=True,
    )
    try:
        wait_for(lambda: "exporting" in log.read_text(), "export started")
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(ANSWER_WAIT)

    wait_for(target.is_file, "exported model after the server was killed")
    wait_for(lambda: not list(cache.glob("*.onnx.tmp")), "leftovers removed")
    assert not leftover.exists()

    # A truncated export (a disk filled up, a copy cut short): made again, and saves work.
    whole = target.stat().st_size
    with target.open("r+b") as damaged:
        damaged.truncate(whole // 3)
    second = spawn(index_dir=tmp_path / "index", env={"IKARIO_MODEL_CACHE": str(cache)})
    second.initialize()
    failed, added = second.call("add_thought", content="Nora keeps bees", namespace="n")
    assert not failed, added
    failed, found = second.call(
        "search_memories", query="beekeeping hobby", mode="semantic", namespace="n"
    )
    assert not failed, found
    assert [r["id"] for r in found["results"]][:1] == [added["id"]]
    assert target.stat().st_size == whole
    second.wait_for_log("was damaged: removed, to be made again")
