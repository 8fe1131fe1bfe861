"""Background work waits while a client writes a reply (ikario_rag/foreground.py).

A real server over stdio, told with real signals: what is added during a hold stays pending
(found by text) and is indexed once the hold ends, or once a step has waited its longest; a
hold cancels the background slice under way; `tell` signals nothing but an ikario_rag
server.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import numpy as np

from ikario_rag import foreground
from ikario_rag.client import tell_foreground as tell
from ikario_rag.foreground import FOREGROUND
from tests.ikario_rag.conftest import READY_WAIT
from tests.ikario_rag.test_embed import TEXTS

# Longer than any test: a hold here ends when the test says so.
HELD = {"IKARIO_FOREGROUND_HOLD": "3600", "IKARIO_FOREGROUND_MOST": "3600"}


def _turns(count: int, day: str, topic: str) -> list[dict]:
    return [
        {
            "content": f"Ada: turn {i} of {day}, I talked about my {topic} again ({i}).",
            "context": {"kind": "conversation", "date": day},
        }
        for i in range(count)
    ]


def _pending(server, namespace: str) -> int:
    return server.tool("memory_stats", namespace=namespace)["unindexed"]


def _wait_indexed(server, namespace: str) -> tuple[int, float]:
    """(vectors still pending, seconds waited), waiting until none is pending (a bound on
    the server's own work, READY_WAIT, not an expectation of speed)."""
    start = time.monotonic()
    while (pending := _pending(server, namespace)) and time.monotonic() - start < READY_WAIT:
        time.sleep(0.05)
    return pending, time.monotonic() - start


def _paused(server) -> bool:
    return server.tool("memory_stats")["health"]["background_paused"]


def _told(server, index_dir, *, busy: bool) -> bool:
    """Signal the server, then wait until its health shows the signal taken (a signal lands
    when the server's signal thread runs, not when os.kill returns; READY_WAIT bounds it).
    Whether the server ended up in the state asked for."""
    assert tell(index_dir, busy=busy)
    deadline = time.monotonic() + READY_WAIT
    while _paused(server) != busy and time.monotonic() < deadline:
        time.sleep(0.02)
    return _paused(server) == busy


def test_it_indexes_nothing_while_a_reply_is_written_and_everything_after(spawn, tmp_path):
    index_dir = tmp_path / "index"
    server = spawn(index_dir=index_dir, env=HELD)
    server.initialize()
    namespace = "held"
    # Unheld, this server indexes such a batch: how long it takes bounds the wait below.
    server.tool("add_thoughts", items=_turns(20, "2024-03-01", "kayak"), namespace=namespace)
    first_pending, unheld = _wait_indexed(server, namespace)

    assert _told(server, index_dir, busy=True)
    server.tool("add_thoughts", items=_turns(20, "2024-03-02", "violin"), namespace=namespace)
    time.sleep(max(1.0, 3 * unheld))  # three times what the same work took without a hold
    during = _pending(server, namespace)
    paused = _paused(server)
    by_text = server.tool("search_memories", query="violin", mode="text", namespace=namespace)
    assert tell(index_dir, busy=False)
    released_pending, _ = _wait_indexed(server, namespace)
    by_meaning = server.tool(
        "search_memories", query="playing a string instrument", mode="semantic", namespace=namespace
    )
    after = _paused(server)
    assert server.close() == 0

    assert (first_pending, during, paused, released_pending, after) == (0, 20, True, 0, False)
    # Pending turns are found by their words.
    assert by_text["results"] and all("violin" in r["content"] for r in by_text["results"])
    assert all("violin" in r["content"] for r in by_meaning["results"][:5])


def test_it_indexes_anyway_once_a_step_has_waited_its_longest(spawn, tmp_path):
    index_dir = tmp_path / "index"
    # A hold that is never released (a client that died mid-reply, or never stops).
    server = spawn(index_dir=index_dir, env={**HELD, "IKARIO_FOREGROUND_MOST": "0.2"})
    server.initialize()
    assert _told(server, index_dir, busy=True)
    server.tool("add_thoughts", items=_turns(12, "2024-03-03", "telescope"), namespace="busy")
    pending, _ = _wait_indexed(server, "busy")
    still_held = _paused(server)
    assert server.close() == 0
    assert (pending, still_held) == (0, True)


def test_it_cancels_the_background_slice_under_way_and_embeds_it_after_the_hold(
    embedder, monkeypatch
):
    reference = embedder.encode(TEXTS * 3)
    run = embedder._run
    started = threading.Event()

    def slice_run(session, rows, *options):
        if options and embedder._background_run is options[0] and not started.is_set():
            started.set()
            # As long as a real slice can take: until the hold below cancels it.
            deadline = time.monotonic() + READY_WAIT
            while not options[0].terminate and time.monotonic() < deadline:
                time.sleep(0.005)
        return run(session, rows, *options)

    monkeypatch.setattr(embedder, "_run", slice_run)
    before = embedder.cancelled_slices
    out: list[np.ndarray] = []
    batch = threading.Thread(
        target=lambda: out.append(embedder.encode_batch(TEXTS * 3, background=True))
    )
    batch.start()
    try:
        assert started.wait(READY_WAIT)
        FOREGROUND.hold(3600)
        # The cancelled slice waits for the release before it runs again.
        deadline = time.monotonic() + READY_WAIT
        while embedder.cancelled_slices == before and time.monotonic() < deadline:
            time.sleep(0.005)
        cancelled = embedder.cancelled_slices - before
        time.sleep(0.2)
        waiting = batch.is_alive() and not out
    finally:
        FOREGROUND.release()
        batch.join(READY_WAIT)
    assert (cancelled, waiting) == (1, True)
    assert np.abs(out[0] - reference).max() < 1e-5


def test_it_does_not_hold_a_foreground_batch_behind_a_waiting_background_one(embedder):
    # A fact's dedup (and a search's settle) embed while a reply is written: never held,
    # not even behind background work waiting for the reply's end.
    reference = embedder.encode(TEXTS)
    FOREGROUND.hold(3600)
    out: list[np.ndarray] = []
    waiting = threading.Thread(
        target=lambda: out.append(embedder.encode_batch(TEXTS, background=True))
    )
    try:
        waiting.start()
        vectors = embedder.encode_batch(TEXTS)
        background_done_while_held = bool(out)
    finally:
        FOREGROUND.release()
        waiting.join(READY_WAIT)
    assert np.abs(vectors - reference).max() < 1e-5
    assert background_done_while_held is False
    assert np.abs(out[0] - reference).max() < 1e-5


def test_it_signals_nothing_but_an_ikario_rag_server(tmp_path):
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        (tmp_path / "server.lock").write_text(f"{bystander.pid}\n\n")
        told_bystander = tell(tmp_path, busy=True)  # SIGUSR1 would have killed it
        alive = bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
    (tmp_path / "server.lock").write_text("not a pid\n")
    assert (told_bystander, alive) == (False, True)
    assert tell(tmp_path, busy=True) is False
    assert tell(tmp_path / "nowhere", busy=False) is False


def test_it_waits_no_longer_than_asked():
    gate = foreground.Foreground()
    assert gate.wait_quiet(most=5) < 1  # nothing held: no wait
    gate.hold(3600)
    waited = gate.wait_quiet(most=0.05)
    assert gate.busy() and waited >= 0.05
    gate.release()
    assert not gate.busy()
