"""While this process writes a reply, background work on this machine steps aside.

chat says when it starts and stops writing answers (chat.signals.reply_writing). The
worker processes of this database are held at once (memory/worker_hold.py), and the memory
server holding the index directory on this machine is told with a signal, its write-behind
indexing waiting in between (ikario_rag/foreground.py says how and why). memory/quiet.py is
the worker's own look, before each step, for replies written anywhere.

Every reply counts, memory on or off: the server's indexing competes for the same cores.
A server reached over HTTP (MCP_IKARIO_SERVER_URL) is not told: its process is not known
here, and it may run on another machine. TASKS_YIELD_TO_CHAT = 0 turns both waits off.
"""

from __future__ import annotations

import logging

from django.conf import settings

from ikario_rag.client import tell_foreground
from memory import worker_hold
from memory.mcp_client import ServerTarget, memory_enabled

logger = logging.getLogger("memory.foreground")


def on_reply_writing(sender, *, writing: bool, **kwargs) -> None:
    if settings.TASKS_YIELD_TO_CHAT <= 0:
        return
    # The worker processes first: their work under way is what a reply meets at once.
    worker_hold.tell_workers(busy=writing)
    if not memory_enabled():
        return
    target = ServerTarget.from_settings()
    if target.server_url:
        return
    if not tell_foreground(target.index_dir, busy=writing):
        logger.debug("no memory server to tell on %s", target.index_dir)
