"""Background work steps aside while an answer is being written.

The worker and the chat share the machine's cores, SQLite's one writer and the memory
server (and, with a worker thread, TASKS_WORKER_MODE=thread, one interpreter): measured,
a worker saving a conversation made a reply with memory off 1.7-2.1x slower at the median
(bench/background_work.py, docs/BENCHMARKS.md).
So before each step (a task, a batch of exchanges sent to the memory server), background
work waits until no answer is streaming, in any process (chat.streaming.chat_is_busy), for
at most TASKS_YIELD_TO_CHAT seconds: then it goes on, so a site that never stops chatting
still gets its memories saved, only later. A worker process the app on this machine has
held (memory/worker_hold.py: it stopped at once, mid-step) waits here for the release
instead of looking at the database.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import DatabaseError

from chat.streaming import chat_is_busy
from memory import worker_hold

logger = logging.getLogger("memory.quiet")

# Between two looks: short next to a reply (~30-60 ms here), cheap (a partial index).
POLL_SECONDS = 0.02


def wait_until_chat_is_quiet(*, most: float | None = None) -> float:
    """Wait while an answer is streaming, at most `most` seconds (default
    TASKS_YIELD_TO_CHAT; 0 turns this off). Returns the seconds waited."""
    most = settings.TASKS_YIELD_TO_CHAT if most is None else most
    if most <= 0:
        return 0.0
    start = time.monotonic()
    while True:
        if worker_hold.held():
            worker_hold.wait_released(most - (time.monotonic() - start))
        try:
            busy = chat_is_busy()
        except DatabaseError:  # a locked or busy database must not stop background work
            logger.warning("could not tell whether the chat is busy", exc_info=True)
            busy = False
        waited = time.monotonic() - start
        if not busy:
            return waited
        if waited >= most:
            logger.info("the chat stayed busy for %.1f s: background work goes on", waited)
            return waited
        time.sleep(POLL_SECONDS)
