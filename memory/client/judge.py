"""A model judges the pairs the consistency rules surface.

ikario_rag's check_consistency lists, for a statement, the memories its rules find
contradicting it, supporting it, or about the same subject and topic without a rule that
applies (`undetermined`). With an API key (and MEMORY_CONSISTENCY_JUDGE on), the web app
shows those pairs to a small model (ANTHROPIC_EXTRACTION_MODEL) with a forced tool call
(`judge_pairs`, a JSON schema: one verdict per pair, from a fixed list) and moves each
memory to the list the model says. Any failure (no answer in time, an API error, an
answer that breaks the schema) keeps the rules' result, marked with `judge_error`.

Offline (no key) the rules' result is shown as it is: "unknown" when they cannot tell.
Nothing between <private> and </private> is sent: the statement's spans are removed here,
the memories' were never stored.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from django.conf import settings

from ikario_rag import contract
from ikario_rag.private import strip as strip_private

if TYPE_CHECKING:  # imported where it is used: manage.py commands would pay ~2 s for it
    import anthropic

logger = logging.getLogger("memory.client.judge")

TOOL_NAME = "judge_pairs"
MAX_PAIRS = 8  # the pairs shown to the model, contradictions and unknown ones first
MAX_MEMORY_CHARS = 600
# What the model may say of a pair, and where the memory goes.
VERDICTS = {
    "contradicts": "contradictions",
    "consistent": "supporting",
    "unsure": "undetermined",
    "unrelated": None,
}

SYSTEM_PROMPT = """You check a statement against what an assistant remembers about its user.
For each pair (P1, P2...) of the statement and one remembered memory, say whether they can
both be true of the same person at the same time:
- contradicts: they cannot both be true now (two different jobs, homes or ages; a diet or
  an allergy and eating that food; a habit said to have stopped and said to go on; one
  denies what the other says). A changed fact (moved, changed jobs) contradicts the old one.
- consistent: about the same person and thing, and both can be true (the same fact, more
  detail, an addition such as "also", a second liking).
- unrelated: about someone else, or about another matter.
- unsure: you cannot tell from the two sentences alone.
Judge only from the two sentences, not from what is usual. Answer every pair once with a
reason of a few words, in the statement's language."""

TOOL = {
    "name": TOOL_NAME,
    "description": "Record a verdict for every pair of the statement and one memory.",
    "input_schema": {
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "maxItems": MAX_PAIRS,
                "items": {
                    "type": "object",
                    "properties": {
                        "pair": {"type": "string", "description": "P1, P2..."},
                        "verdict": {"type": "string", "enum": list(VERDICTS)},
                        "reason": {"type": "string", "description": "A few words."},
                    },
                    "required": ["pair", "verdict", "reason"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["verdicts"],
        "additionalProperties": False,
    },
}


class BadAnswer(ValueError):
    """The model's answer does not follow the schema."""


def enabled() -> bool:
    return bool(settings.MEMORY_CONSISTENCY_JUDGE and settings.ANTHROPIC_API_KEY)


def client() -> anthropic.Anthropic:
    import anthropic

    return anthropic.Anthropic(
        api_key=settings.ANTHROPIC_API_KEY,
        base_url=settings.ANTHROPIC_BASE_URL or None,
        # Someone waits on the page: one retry at most, then the rules' answer.
        max_retries=min(1, settings.ANTHROPIC_MAX_RETRIES),
        timeout=settings.MEMORY_CONSISTENCY_TIMEOUT,
    )


def pairs_of(result: dict) -> list[dict]:
    """The findings to judge, each with its list: contradictions, then the undetermined
    ones, then the supporting ones, at most MAX_PAIRS."""
    found = [
        (name, finding)
        for name in ("contradictions", "undetermined", "supporting")
        for finding in result.get(name) or []
        if isinstance(finding, dict) and finding.get("id")
    ]
    return [{"list": name, "finding": finding} for name, finding in found[:MAX_PAIRS]]


def build_request(statement: str, pairs: list[dict], model: str, user_name: str = "") -> dict:
    """The Messages API request (a forced `judge_pairs` call). The user's name, when known,
    says who "I" is: memories are often written with it ("Alice lives in Lyon")."""
    lines = [f"The user's name: {' '.join(user_name.split())}"] if user_name.strip() else []
    lines += [f"Statement (said by the user): {' '.join(statement.split())}", "", "Memories:"]
    for n, pair in enumerate(pairs, 1):
        memory = " ".join(str(pair["finding"].get("content", "")).split())
        lines.append(f"P{n}: {memory[:MAX_MEMORY_CHARS]}")
    return {
        "model": model,
        "max_tokens": 1024,
        "system": SYSTEM_PROMPT,
        "messages": [{"role": "user", "content": "\n".join(lines)}],
        "tools": [TOOL],
        "tool_choice": {"type": "tool", "name": TOOL_NAME},
    }


def verdicts_from(message, count: int) -> dict[int, tuple[str, str]]:
    """{pair index: (verdict, reason)} from the model's `judge_pairs` call; BadAnswer when
    it breaks the schema (no call, a verdict outside the list, a pair that does not exist
    or is judged twice)."""
    called = next(
        (b for b in message.content if b.type == "tool_use" and b.name == TOOL_NAME), None
    )
    answered = (called.input or {}).get("verdicts") if called is not None else None
    if not isinstance(answered, list):
        raise BadAnswer("no verdicts")
    out: dict[int, tuple[str, str]] = {}
    for item in answered:
        if not isinstance(item, dict) or item.get("verdict") not in VERDICTS:
            raise BadAnswer(f"not a verdict: {item!r:.200}")
        label = str(item.get("pair") or "").strip().upper()
        index = int(label[1:]) - 1 if label[:1] == "P" and label[1:].isdigit() else -1
        if not 0 <= index < count or index in out:
            raise BadAnswer(f"no such pair: {label!r:.50}")
        reason = " ".join(str(item.get("reason") or "").split())[:300]
        out[index] = (item["verdict"], reason)
    return out


def apply(result: dict, pairs: list[dict], verdicts: dict[int, tuple[str, str]]) -> dict:
    """The result with each judged memory in the list the model said (a pair it left out
    stays where the rules put it), and its verdict and score worked out again."""
    lists: dict[str, list] = {
        name: list(result.get(name) or [])
        for name in ("contradictions", "supporting", "undetermined")
    }
    for index, pair in enumerate(pairs):
        if index not in verdicts:
            continue
        verdict, reason = verdicts[index]
        lists[pair["list"]] = [f for f in lists[pair["list"]] if f is not pair["finding"]]
        target = VERDICTS[verdict]
        if target:
            lists[target].append({**pair["finding"], "reason": reason or verdict})
    return {
        **result,
        **lists,
        **contract.consistency_summary(
            lists["contradictions"], lists["supporting"], lists["undetermined"]
        ),
        "judged_by": "model",
    }


def judged(
    statement: str,
    result: dict,
    *,
    user_name: str = "",
    using: anthropic.Anthropic | None = None,
) -> dict:
    """`result` (check_consistency's) with its pairs judged by the model when one is
    configured; the rules' result itself otherwise, or when the model fails."""
    pairs = pairs_of(result)
    if not pairs or not (using or enabled()):
        return result
    import anthropic

    try:
        model = settings.ANTHROPIC_EXTRACTION_MODEL
        request = build_request(strip_private(statement), pairs, model, user_name)
        message = (using or client()).messages.create(**request)
        return apply(result, pairs, verdicts_from(message, len(pairs)))
    except anthropic.APITimeoutError:
        error = "timeout"
    except anthropic.APIError as exc:
        error = f"api error: {type(exc).__name__}"
    except BadAnswer as exc:
        error = f"bad answer: {exc}"
    logger.warning("consistency judge failed, the rules' verdict stands: %s", error)
    return {**result, "judged_by": "rules", "judge_error": error}
