"""One conversation of ChatGPT's conversations.json, as a past chat.

A ChatGPT conversation is a tree: `mapping` holds each node by id ({message, parent,
children}); a regenerated answer or an edited question starts a branch, and `current_node`
is the node the user ended on. Only that branch, followed back to the root, is the
conversation. System messages, tools' output, hidden context (custom instructions), the
model's calls to its tools and its reasoning are not what the user and the assistant said:
they are left out. Attachments are kept by name.
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from memory.history import checks
from memory.history.checks import Damaged
from memory.history.past import ASSISTANT, CHATGPT, USER, PastChat, PastMessage

ROLES = {"user": USER, "assistant": ASSISTANT}
# What a user or an answer says; the rest (code run by a tool, reasoning, browsing) is not.
SAID = {"text", "multimodal_text"}


def looks_like(item) -> bool:
    return isinstance(item, dict) and "mapping" in item


def chat(raw, n: int) -> PastChat:
    where = _("conversation %(n)d") % {"n": n}
    if not isinstance(raw, dict) or not isinstance(raw.get("mapping"), dict):
        raise Damaged(_("%(where)s: not a ChatGPT conversation (no mapping)") % {"where": where})
    source_id = checks.identifier(raw.get("conversation_id") or raw.get("id"), where)
    created = checks.epoch(raw.get("create_time"), None)
    if created is None:
        raise Damaged(_("%(where)s: no create_time") % {"where": where})
    title = checks.text(raw.get("title"), where, most=10_000).strip()[: checks.MAX_TITLE]
    messages: list[PastMessage] = []
    for node in branch(raw["mapping"], raw.get("current_node"), where):
        said = message(node.get("message"), where, created)
        if said is None:
            continue
        if messages and messages[-1].role == said.role:  # one answer in several messages
            messages[-1].text = f"{messages[-1].text}\n\n{said.text}"
        else:
            messages.append(said)
    updated = checks.epoch(raw.get("update_time"), None) or (
        messages[-1].at if messages else created
    )
    return PastChat(CHATGPT, source_id, title, created, max(updated, created), messages)


def branch(mapping: dict, current, where: str) -> list[dict]:
    """The nodes from the root to `current` (the leaf the user ended on), in order."""
    if not isinstance(current, str) or current not in mapping:
        current = _last_leaf(mapping)
    path: list[dict] = []
    seen: set[str] = set()
    while isinstance(current, str) and current in mapping:
        if current in seen or len(path) > checks.MAX_MESSAGES:
            raise Damaged(_("%(where)s: its message tree loops") % {"where": where})
        seen.add(current)
        node = mapping[current]
        if not isinstance(node, dict):
            raise Damaged(_("%(where)s: a node is not an object") % {"where": where})
        path.append(node)
        current = node.get("parent")
    path.reverse()
    return path


def _last_leaf(mapping: dict):
    """No current node named: the latest leaf stands for the branch the user ended on."""
    leaves = [
        (_time(node), key)
        for key, node in mapping.items()
        if isinstance(node, dict) and not node.get("children")
    ]
    return max(leaves)[1] if leaves else None


def _time(node: dict) -> float:
    found = (node.get("message") or {}).get("create_time") if isinstance(node, dict) else None
    return float(found) if isinstance(found, (int, float)) else 0.0


def message(raw, where: str, default_at) -> PastMessage | None:
    """What a node says, or None for what nobody said to the other (system, tools, hidden)."""
    if not isinstance(raw, dict):
        return None
    role = ROLES.get(
        (raw.get("author") or {}).get("role") if isinstance(raw.get("author"), dict) else None
    )
    metadata = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    if role is None or metadata.get("is_visually_hidden_from_conversation"):
        return None
    if raw.get("recipient", "all") != "all":  # the model calling a tool
        return None
    content = raw.get("content") if isinstance(raw.get("content"), dict) else {}
    if content.get("content_type") not in SAID:
        return None
    parts = content.get("parts") if isinstance(content.get("parts"), list) else []
    words = [checks.text(p, where) for p in parts if isinstance(p, str)]
    names = [
        checks.text(a.get("name"), where, most=500)
        for a in metadata.get("attachments") or []
        if isinstance(a, dict) and isinstance(a.get("name"), str)
    ]
    said = "\n".join(w for w in words if w.strip())
    if names:
        attached = _("Attached: %(names)s") % {"names": ", ".join(names)}
        said = f"{said}\n\n[{attached}]" if said else f"[{attached}]"
    if not said.strip():
        return None
    return PastMessage(role, said, checks.epoch(raw.get("create_time"), default_at))
