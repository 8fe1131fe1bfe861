"""One conversation of Claude.ai's conversations.json, as a past chat; its memories.json.

A Claude.ai conversation lists its messages in `chat_messages` ({sender: human|assistant,
text, content: blocks, attachments, files}). When the export names the leaf the user ended
on (`current_leaf_message_uuid`, with each message's `parent_message_uuid`), only that branch
is kept. Tool calls, their results and thinking blocks are not what was said; attachments
are kept by name.
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from memory.history import checks
from memory.history.checks import Damaged
from memory.history.past import ASSISTANT, CLAUDE, USER, PastChat, PastMessage

ROLES = {"human": USER, "assistant": ASSISTANT}


def looks_like(item) -> bool:
    return isinstance(item, dict) and "chat_messages" in item


def holds_memories(item) -> bool:
    return isinstance(item, dict) and "conversations_memory" in item


def chat(raw, n: int) -> PastChat:
    where = _("conversation %(n)d") % {"n": n}
    if not isinstance(raw, dict) or not isinstance(raw.get("chat_messages"), list):
        raise Damaged(
            _("%(where)s: not a Claude.ai conversation (no chat_messages)") % {"where": where}
        )
    source_id = checks.identifier(raw.get("uuid"), where)
    created = checks.iso(raw.get("created_at"), None)
    if created is None:
        raise Damaged(_("%(where)s: no created_at") % {"where": where})
    title = checks.text(raw.get("name"), where, most=10_000).strip()[: checks.MAX_TITLE]
    rows = _branch(raw["chat_messages"], raw.get("current_leaf_message_uuid"), where)
    messages: list[PastMessage] = []
    for row in rows:
        said = message(row, where, created)
        if said is None:
            continue
        if messages and messages[-1].role == said.role:
            messages[-1].text = f"{messages[-1].text}\n\n{said.text}"
        else:
            messages.append(said)
    updated = checks.iso(raw.get("updated_at"), None) or (messages[-1].at if messages else created)
    return PastChat(CLAUDE, source_id, title, created, max(updated, created), messages)


def _branch(rows: list, leaf, where: str) -> list:
    if len(rows) > checks.MAX_MESSAGES:
        raise Damaged(_("%(where)s: too many messages") % {"where": where})
    by_id = {r.get("uuid"): r for r in rows if isinstance(r, dict) and r.get("uuid")}
    if not isinstance(leaf, str) or leaf not in by_id:
        return rows  # the export's order is the conversation's
    path, seen = [], set()
    while isinstance(leaf, str) and leaf in by_id and leaf not in seen:
        seen.add(leaf)
        path.append(by_id[leaf])
        leaf = by_id[leaf].get("parent_message_uuid")
    path.reverse()
    return path


def message(raw, where: str, default_at) -> PastMessage | None:
    if not isinstance(raw, dict):
        return None
    role = ROLES.get(raw.get("sender"))
    if role is None:
        return None
    blocks = raw.get("content") if isinstance(raw.get("content"), list) else []
    words = [
        checks.text(b.get("text"), where)
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "text"
    ]
    said = "\n".join(w for w in words if w.strip()) or checks.text(raw.get("text"), where)
    names = [
        checks.text(f.get("file_name"), where, most=500)
        for key in ("attachments", "files")
        for f in raw.get(key) or []
        if isinstance(f, dict) and isinstance(f.get("file_name"), str) and f.get("file_name")
    ]
    names = list(dict.fromkeys(names))
    if names:
        attached = _("Attached: %(names)s") % {"names": ", ".join(names)}
        said = f"{said}\n\n[{attached}]" if said.strip() else f"[{attached}]"
    if not said.strip():
        return None
    return PastMessage(role, said, checks.iso(raw.get("created_at"), default_at))


def memories_text(raw, n: int) -> str:
    """The memory Claude.ai kept, as text (its conversations' memory, then each project's)."""
    where = _("memories %(n)d") % {"n": n}
    if not isinstance(raw, dict):
        raise Damaged(_("%(where)s: not an object") % {"where": where})
    texts = [checks.text(raw.get("conversations_memory"), where)]
    projects = raw.get("project_memories")
    if isinstance(projects, dict):
        texts += [checks.text(v, where) for v in projects.values() if isinstance(v, str)]
    return "\n".join(t for t in texts if t)
