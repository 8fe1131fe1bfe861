"""The write-behind indexer thread (ikario_rag/indexer.py): it stops whenever it is told."""

from __future__ import annotations

import threading

from ikario_rag.indexer import Indexer
from tests.ikario_rag.conftest import READY_WAIT


class QuietMemory:
    """What the indexer reads of a Memory: repaired, sound, with nothing to index."""

    def __init__(self) -> None:
        self.repaired = threading.Event()
        self.repaired.set()
        self.vectors_suspect = False
        self.passes = 0

    def file_problem(self):
        return None

    def index_pending(self, stop, batch) -> int:
        self.passes += 1
        return 0


def test_it_stops_when_told_between_its_wake_up_and_clearing_it():
    # The worst moment for stop(): after the indexer's pause, before it clears the wake-up
    # that stop() sets. A stop lost there left the server's close waiting for ever.
    memory = QuietMemory()
    indexer = Indexer(memory)
    clear = indexer._wake.clear

    def stop_then_clear():
        indexer._stop.set()  # what stop() does, in its order
        indexer._wake.set()
        clear()

    indexer._wake.clear = stop_then_clear
    indexer.wake()
    indexer._thread.join(READY_WAIT)

    assert not indexer._thread.is_alive()
    assert memory.passes == 0  # told to stop: no indexing pass after it


def test_it_indexes_on_each_wake_up_and_stops():
    memory = QuietMemory()
    indexer = Indexer(memory)
    indexer.wake()
    for _ in range(int(READY_WAIT / 0.01)):
        if memory.passes:
            break
        threading.Event().wait(0.01)

    indexer.stop()

    assert memory.passes >= 1
    assert not indexer._thread.is_alive()
