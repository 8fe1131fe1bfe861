"""While this process writes a reply, the memory server's background work steps aside.

chat says when it starts and stops writing answers (chat.signals.reply_writing); the memory
server holding the index directory on this machine is told with a signal, and its
write-behind indexing waits in between (ikario_rag/foreground.py says how and why). This is
the memory server's side of memory/quiet.py, which makes this app's own worker wait.

Every reply counts, memory on or off: the server's indexing competes for the same cores.
A server reached over HTTP (MCP_IKARIO_SERVER_URL) is not told: its process is not known
here, and it may run on another machine. TASKS_YIELD_TO_CHAT = 0 turns both waits off.
"""

from __future__ import annotations

import logging

from django.conf import settings

from ikario_rag.client import tell_foreground
from memory.mcp_client import ServerTarget, memory_enabled

logger = logging.getLogger("memory.foreground")


def on_reply_writing(sender, *, writing: bool, **kwargs) -> None:
    if not memory_enabled() or settings.TASKS_YIELD_TO_CHAT <= 0:
        return
    target = ServerTarget.from_settings()
    if target.server_url:
        return
    if not tell_foreground(target.index_dir, busy=writing):
        logger.debug("no memory server to tell on %s", target.index_dir)
