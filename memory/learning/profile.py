"""The profile: what Ikario knows about a user (who they are, their preferences, their
ongoing projects), in a few lines at the top of every conversation's system prompt.

- **Built in the background** from the user's facts, with or without a key: whoever stores
  facts (the model's extraction, the rules of memory/learning/offline_facts.py) counts those it
  created or changed; the first one builds an empty profile at once, later ones once
  MEMORY_PROFILE_REBUILD_AFTER have changed and the last build is at least
  MEMORY_PROFILE_MIN_INTERVAL old (a day). With an API key the small model writes it (a
  forced `write_profile` call); offline it is the stored facts grouped by section (who
  they are, then their circle; preferences; projects), newest first, passing states (facts
  that expire) left out. Offline, a profile never built is built when the user opens it.
- **The user's edit wins**: saving the profile page stores the text as `edited`, used at
  once and kept; rebuilds only refresh `built`, shown on the page as Ikario's version,
  which the user may take instead ("Use Ikario's version" clears the edit).
- **Off with memory**: not injected, not rebuilt when memory is off for the user.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop, pgettext
from django_tasks import task

from chat.prompt_text import without_tags
from memory.client import services
from memory.client.errors import MemoryDisabled
from memory.models import MemorySettings, UserProfile

logger = logging.getLogger("memory.learning.profile")

FACT_KINDS = ("self", "preference", "goal", "fact")
# Stored in English (Claude reads them in the prompt); shown in the reader's language.
SECTIONS = (
    (gettext_noop("Who"), ("self", "fact")),
    (gettext_noop("Preferences"), ("preference",)),
    (gettext_noop("Ongoing projects"), ("goal",)),
)
PER_SECTION = 6
FACTS_READ = 100
BLOCK_TAG = "user_profile"
BLOCK_INTRO = (
    "What you know about the user (a profile Ikario keeps from past conversations; the "
    "user can read and edit it). Use it when it helps; do not recite it."
)
TOOL = {
    "name": "write_profile",
    "description": "Write the user's profile: three short paragraphs, plain text.",
    "input_schema": {
        "type": "object",
        "properties": {
            "who": {"type": "string", "description": "Who the user is, their circle."},
            "preferences": {"type": "string", "description": "What they like and want."},
            "projects": {"type": "string", "description": "What they are working on."},
        },
        "required": ["who", "preferences", "projects"],
    },
}
SYSTEM_PROMPT = (
    "Write a short profile of the user from the facts an assistant remembers about them, "
    "newest first (a newer fact wins over an older one that contradicts it). At most 60 "
    "words a section, in the language of the facts, no invention; an empty string for a "
    "section with no facts."
)


def memory_on_for_user(user) -> bool:
    return MemorySettings.is_on_for(user)


def profile_of(user) -> UserProfile:
    profile, _ = UserProfile.objects.get_or_create(user=user)
    return profile


# --- rebuilding -------------------------------------------------------------------------


def facts_changed(*, user, count: int) -> None:
    """Extraction created or changed `count` facts: rebuild when enough changed, daily at most."""
    profile = profile_of(user)
    UserProfile.objects.filter(pk=profile.pk).update(changes=F("changes") + count)
    profile.refresh_from_db(fields=["changes", "built", "built_at"])
    if not profile.built:
        # Nothing to show yet: the first facts are worth a profile at once.
        transaction.on_commit(lambda: rebuild_profile.enqueue(user.pk))
        return
    due = profile.built_at is None or profile.built_at <= timezone.now() - timedelta(
        seconds=settings.MEMORY_PROFILE_MIN_INTERVAL
    )
    if profile.changes >= settings.MEMORY_PROFILE_REBUILD_AFTER and due:
        transaction.on_commit(lambda: rebuild_profile.enqueue(user.pk))


def ensure_built(user) -> UserProfile:
    """The user's profile; offline, one never built is built now from the stored facts (no
    model to wait for: one read of the memory). With a key the stored facts' extraction
    builds it in the background (facts_changed)."""
    profile = profile_of(user)
    if profile.built or settings.ANTHROPIC_API_KEY or not memory_on_for_user(user):
        return profile
    try:
        _rebuild(user, profile)
    except Exception:  # the page shows what it has; the memory server may be down
        logger.warning("profile of user %s not built offline", user.pk, exc_info=True)
    profile.refresh_from_db()
    return profile


def _line(text: str) -> str:
    return " ".join(without_tags(str(text or "")).split())


def render(sections: dict[str, str]) -> str:
    lines = [f"{title}: {_line(sections.get(title, ''))}" for title, _ in SECTIONS]
    text = "\n".join(line for line in lines if not line.endswith(": "))
    return text[: settings.MEMORY_PROFILE_MAX_CHARS]


def _heading(title: str) -> str:
    return pgettext("profile section", "%(section)s:") % {"section": gettext(title)}


def for_reader(text: str) -> str:
    """The profile with its section headings in the active language ("Qui :" in French)."""
    return _headings(text, {f"{title}:": _heading(title) for title, _ in SECTIONS})


def from_reader(text: str) -> str:
    """A profile the user saved, its translated headings back in English (as stored)."""
    return _headings(text, {_heading(title): f"{title}:" for title, _ in SECTIONS})


def _headings(text: str, names: dict[str, str]) -> str:
    lines = []
    for line in text.split("\n"):
        said = next((name for name in names if line.startswith(name + " ")), None)
        lines.append(names[said] + line[len(said) :] if said else line)
    return "\n".join(lines)


def build_offline(facts: list[dict]) -> str:
    """The stored facts (newest first) grouped by section, no LLM: in each section the kinds
    in their order (who the user is before their circle), newest first, each text once;
    passing states (facts that expire: "in Lyon until Friday") are not who someone is."""
    lasting = [f for f in facts if not (f.get("metadata") or {}).get("expires_at")]
    sections = {}
    for title, kinds in SECTIONS:
        lines: list[str] = []
        for kind in kinds:
            for fact in lasting:
                line = _line(fact.get("content")).rstrip(".")
                if (fact.get("metadata") or {}).get("kind") == kind and line not in lines:
                    lines.append(line)
        sections[title] = "; ".join(lines[:PER_SECTION])
    return render(sections)


def build_with_model(facts: list[dict]) -> str:
    listing = "\n".join(
        f"- [{(f.get('metadata') or {}).get('kind', 'fact')}] {_line(f.get('content'))}"
        for f in facts
    )
    import anthropic  # here: every process start (manage.py) would pay ~2 s for it

    message = anthropic.Anthropic(
        api_key=settings.ANTHROPIC_API_KEY,
        base_url=settings.ANTHROPIC_BASE_URL or None,
        max_retries=settings.ANTHROPIC_MAX_RETRIES,
        timeout=settings.MEMORY_TASK_TIMEOUT,
    ).messages.create(
        model=settings.ANTHROPIC_EXTRACTION_MODEL,
        max_tokens=800,
        system=SYSTEM_PROMPT,
        messages=[{"role": "user", "content": f"Facts, newest first:\n{listing}"}],
        tools=[TOOL],
        tool_choice={"type": "tool", "name": TOOL["name"]},
    )
    called = next(
        (b for b in message.content if b.type == "tool_use" and b.name == TOOL["name"]), None
    )
    if called is None or not isinstance(called.input, dict):
        return build_offline(facts)
    written = called.input
    return render(
        {
            "Who": written.get("who", ""),
            "Preferences": written.get("preferences", ""),
            "Ongoing projects": written.get("projects", ""),
        }
    )


@task()
def rebuild_profile(user_id: int) -> dict:
    """Rebuild `built` from the user's facts; the user's edit is never touched."""
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None or not memory_on_for_user(user):
        return {"built": False, "skipped": "memory is off (or no such user)"}
    try:
        facts = _rebuild(user, profile_of(user))
    except MemoryDisabled:
        return {"built": False, "skipped": "memory is off"}
    return {"built": True, "facts": facts}


def _rebuild(user, profile: UserProfile) -> int:
    found = services.get_recent_memories(user=user, limit=FACTS_READ, kinds=list(FACT_KINDS))
    facts = found.get("memories") or []
    text = build_with_model(facts) if settings.ANTHROPIC_API_KEY and facts else build_offline(facts)
    UserProfile.objects.filter(pk=profile.pk).update(built=text, built_at=timezone.now(), changes=0)
    logger.info("profile of user %s rebuilt from %d facts", user.pk, len(facts))
    return len(facts)


# --- using it ---------------------------------------------------------------------------


def edit(*, user, text: str) -> UserProfile:
    """The user's own profile: used at once, kept through rebuilds."""
    profile = profile_of(user)
    profile.edited = text
    profile.edited_at = timezone.now()
    profile.save(update_fields=["edited", "edited_at"])
    return profile


def use_built(*, user) -> UserProfile:
    """Drop the user's edit: Ikario's version is used again."""
    profile = profile_of(user)
    profile.edited = ""
    profile.edited_at = None
    profile.save(update_fields=["edited", "edited_at"])
    return profile


def block(text: str) -> str:
    """The profile as a delimited system-prompt block ("" when empty); its text can never
    close or reopen the block (memory/recall/prompts.py's one rule)."""
    lines = [line.strip() for line in without_tags(text).splitlines() if line.strip()]
    if not lines:
        return ""
    return "\n".join([f"<{BLOCK_TAG}>", BLOCK_INTRO, *lines, f"</{BLOCK_TAG}>"])


async def aprofile_block(user) -> str:
    profile = await UserProfile.objects.filter(user=user).afirst()
    return block(profile.text) if profile else ""
