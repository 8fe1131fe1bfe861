"""The offline responder: a deterministic stand-in for Claude when no API key is set.

It is not a language model. It exists so that a fresh install with no key can still show
the whole memory loop: "remember that …" goes through the real save_memory tool, "what do
you know about …" through the real search_memories tool, "search my chats for …" through
the real conversation_search tool, and memories recalled automatically are quoted back.
Everything else is echoed, clearly labelled.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import AsyncIterator

from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

LABEL = "Offline responder"  # the messages' model name: stays English, like Claude's


def _prefix() -> str:
    """The label every answer starts with, in the language of the page that asked."""
    return "*" + _("Offline responder: no ANTHROPIC_API_KEY is set, so this is not Claude.") + "*"


# A request is in a message's opening ("remember that …", "what do you know about …"):
# the patterns below only match that opening, read from at most this many characters;
# the rest of the message is taken by slicing. Nothing scans user text with a pattern
# whose quantifiers overlap (the old `(?P<topic>.+?)[\s?.!]*$` was quadratic: a 40,000-
# character message took 15 s on the event loop).
OPENING_CHARS = 200
# "remember that X", "please note: X", "retiens que X", "n'oublie pas que X"…
_REMEMBER = re.compile(
    r"(?:please[,\s]+)?(?:remember|note|keep in mind|retiens|souviens-toi|"
    r"n['’]oublie pas|note bien)\b(?:\s+(?:(?:that|que)\b|qu['’]))?[\s:,]*",
    re.IGNORECASE,
)
# "what do you know about X", "do you remember X", "que sais-tu de X", "te souviens-tu de X"…
_RECALL = re.compile(
    r"(?:what do you (?:know|remember) about|do you remember|what did i (?:tell|say)"
    r" (?:you )?about|que sais[- ]tu (?:de|du|des|sur|à propos de)|"
    r"te souviens[- ]tu (?:de|du|des)?|qu['’]est-ce que tu sais (?:de|sur))\s*",
    re.IGNORECASE,
)
# "search my chats for X", "find in our past conversations X", "cherche dans mes conversations X":
# the opening only (what follows is the query, taken by slicing: no backtracking over it).
_SEARCH_CHATS = re.compile(
    r"\s*(?:please[,\s]+)?(?:search|find|look)(?: through| in)? (?:my|our|past|old)"
    r"(?: past| old| other)? (?:chats|conversations)(?: for| about)?[\s:]*"
    r"|\s*(?:cherche|recherche)(?: dans)? (?:mes|nos) (?:anciennes )?"
    r"(?:conversations|discussions)(?: sur| pour)?[\s:]*",
    re.IGNORECASE,
)
# One recalled memory's line in the system prompt (memory/recall/prompts.py): one line each, its
# label "when; category; tags: …" (only the when is said back: the rest is for Claude).
_RECALLED_LINE = re.compile(
    r"^- \[(?P<when>[^\];\n]*)(?:;[^\]\n]*)?\] (?P<text>[^\n]+)$", re.MULTILINE
)
# The profile Ikario keeps about the user, at the top of the system prompt
# (memory/learning/profile.py's block): its opening tag, one line of introduction, its lines.
_PROFILE = re.compile(r"^<user_profile>\n[^\n]*\n(?P<lines>.*?)\n</user_profile>$", re.M | re.S)
# "What do you know about me?": the user asks what Ikario knows of them (the profile says).
_ABOUT_ME = frozenset({"me", "myself", "moi", "moi-même", "moi même"})
_ids = itertools.count(1)


def plan_reply(*, system: str, messages: list[dict], tools: list[dict] | None) -> dict:
    """What the responder does this round: {"text": str} or {"text", "tool_use": block}."""
    offered = {tool["name"] for tool in tools or []}
    last = messages[-1]["content"] if messages else ""
    if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
        return {"text": _after_tools(last, messages)}
    text = _plain(last).strip()
    fact = _after(_REMEMBER, text).strip()
    if fact and "save_memory" in offered:
        call = {"content": fact, "category": "contextuelle", "tags": []}
        return {"text": "", "tool_use": _tool_use("save_memory", call)}
    query = _trim_end(_after(_SEARCH_CHATS, text))
    if query and "conversation_search" in offered:
        return {"text": "", "tool_use": _tool_use("conversation_search", {"query": query})}
    topic = _trim_end(_after(_RECALL, text))
    profile = _PROFILE.search(system or "")
    if topic.lower() in _ABOUT_ME and profile:
        lines = [line for line in profile.group("lines").splitlines() if line.strip()]
        said = "\n".join(f"- {line}" for line in lines)
        heading = _("Here is what I know about you:")
        return {"text": f"{_prefix()} {heading}\n\n{said}"}
    if topic and "search_memories" in offered:
        call = {"query": topic, "n_results": 5}
        return {"text": "", "tool_use": _tool_use("search_memories", call)}
    answer = _prefix() + " " + _("You said: “%(text)s”.") % {"text": text[:500]}
    recalled = _RECALLED_LINE.findall(system or "")
    if recalled:
        answer += "\n\n" + _("What my memory recalled for this message:") + "\n"
        answer += "\n".join(f"- {body} ({when})" for when, body in recalled)
    return {"text": answer}


def _after(pattern: re.Pattern, text: str) -> str:
    """What follows the request `pattern` opening `text` with ("" when it does not)."""
    opening = pattern.match(text[:OPENING_CHARS])
    return text[opening.end() :] if opening else ""


def _trim_end(text: str) -> str:
    """`text` without its trailing white space and ?.! (a loop from the end: linear)."""
    end = len(text)
    while end and (text[end - 1].isspace() or text[end - 1] in "?.!"):
        end -= 1
    return text[:end]


async def offline_round(
    *, system: str, messages: list[dict], tools: list[dict] | None, result_type
) -> AsyncIterator:
    """Streams the planned reply word by word, then one `result_type` (llm.RoundResult)."""
    # Planning reads the whole message: CPU work on user input, off the event loop. The
    # page's language is taken along: Django's active language is per thread, and the
    # worker thread would otherwise answer in the default (English).
    language = translation.get_language()

    def plan_in_language() -> dict:
        with translation.override(language):
            return plan_reply(system=system, messages=messages, tools=tools)

    plan = await asyncio.to_thread(plan_in_language)
    content = []
    pieces = plan["text"].split(" ") if plan["text"] else []
    for index, word in enumerate(pieces):
        yield word if index == len(pieces) - 1 else word + " "
        await asyncio.sleep(0)  # let the consumer flush each piece, like a real stream
    if plan["text"]:
        content.append({"type": "text", "text": plan["text"]})
    if "tool_use" in plan:
        content.append(plan["tool_use"])
    yield result_type(
        content=content,
        stop_reason="tool_use" if "tool_use" in plan else "end_turn",
        usage={"input_tokens": 0, "output_tokens": len(pieces)},
    )


def _tool_use(name: str, data: dict) -> dict:
    return {"type": "tool_use", "id": f"toolu_offline_{next(_ids)}", "name": name, "input": data}


def _plain(content) -> str:
    if isinstance(content, list):
        return " ".join(b.get("text", "") for b in content if isinstance(b, dict))
    return content or ""


# A search tool's answer: (nothing found, heading, one line per result).
_FOUND = {
    "search_memories": (
        gettext_lazy("I found nothing about that in my memory."),
        gettext_lazy("Here is what my memory holds about that:"),
        lambda m: f"- {m.get('content', '')}",
    ),
    "conversation_search": (
        gettext_lazy("I found nothing about that in your other chats."),
        gettext_lazy("Here is what I found in your other chats:"),
        lambda r: f"- [{r['chat']}]({r['url']}): {r['passage']}",
    ),
}


def _after_tools(results: list[dict], messages: list[dict]) -> str:
    """The answer once the tools ran: said from what they actually returned."""
    names = {}
    if len(messages) >= 2 and isinstance(messages[-2]["content"], list):
        names = {b.get("id"): b.get("name") for b in messages[-2]["content"]}
    lines = [_prefix()]
    for block in results:
        if block.get("type") != "tool_result":
            continue
        body = _plain(block.get("content"))
        if block.get("is_error"):
            lines.append(_("The memory tool failed: %(error)s") % {"error": body[:300]})
            continue
        try:
            data = json.loads(body)
        except ValueError:
            data = {}
        name = names.get(block.get("tool_use_id"))
        if name in _FOUND:
            found = data.get("results") or []
            nothing, heading, line = _FOUND[name]
            lines += [str(heading), *map(line, found)] if found else [str(nothing)]
        else:
            status = data.get("status", "created")
            lines.append(
                _("I already had that in memory.")
                if status == "duplicate"
                else _("Noted: I saved that to my memory.")
            )
    return "\n\n".join([lines[0], "\n".join(lines[1:])])
