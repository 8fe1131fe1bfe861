"""The profile: what Ikario knows about the person (memory/learning/person/sheet.py: their
facts by domain of their life, most important first, about 1,500 tokens at most), at the top
of every system prompt while memory is on for the chat (memory/recall/turn.py).

- **Rebuilt when facts change, in the background**: whoever stores facts (the model's
  extraction, the rules of memory/learning/offline_facts.py) counts those it created or
  changed; the first change since the last build queues one rebuild, run
  MEMORY_PROFILE_DEBOUNCE seconds later (the changes of a whole conversation's learning in
  one read of the memory), never at a turn. The same rules build it with or without a key:
  the facts are the model's sentences when there is one. Offline, a profile never built is
  built when the user opens it.
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
from django.db.models.functions import Greatest
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop, pgettext
from django_tasks import task

from chat.prompt_text import without_tags
from memory.client import services
from memory.client.errors import MemoryDisabled
from memory.learning.person import sheet
from memory.models import MemorySettings, UserProfile

logger = logging.getLogger("memory.learning.profile")

FACT_KINDS = ("self", "preference", "goal", "fact")
# The headings of profiles written before the sheet had domains (a user's edit keeps them).
EARLIER_SECTIONS = (
    gettext_noop("Who"),
    gettext_noop("Preferences"),
    gettext_noop("Ongoing projects"),
)
FACTS_READ = 100
BLOCK_TAG = "user_profile"
BLOCK_INTRO = (
    "What you know about the user (a profile Ikario keeps from past conversations, newest "
    "facts first; the user can read and edit it). Use it when it helps; do not recite it."
)


def memory_on_for_user(user) -> bool:
    return MemorySettings.is_on_for(user)


def profile_of(user) -> UserProfile:
    profile, _ = UserProfile.objects.get_or_create(user=user)
    return profile


# --- rebuilding -------------------------------------------------------------------------


def facts_changed(*, user, count: int) -> None:
    """Extraction created or changed `count` facts: the first change since the last build
    queues a rebuild (debounced: later ones ride on it)."""
    profile = profile_of(user)
    UserProfile.objects.filter(pk=profile.pk).update(changes=F("changes") + count)
    if profile.changes == 0:
        # Nothing built yet: the first facts are worth a profile at once.
        _queue_rebuild(user.pk, at_once=not profile.built)


def _queue_rebuild(user_id: int, *, at_once: bool = False) -> None:
    wait = 0 if at_once else settings.MEMORY_PROFILE_DEBOUNCE
    queued = rebuild_profile
    if wait > 0:
        queued = rebuild_profile.using(run_after=timezone.now() + timedelta(seconds=wait))
    transaction.on_commit(lambda: queued.enqueue(user_id))


def ensure_built(user) -> UserProfile:
    """The user's profile; offline, one never built is built now from the stored facts (one
    read of the memory). With a key the stored facts' extraction builds it in the
    background (facts_changed)."""
    profile = profile_of(user)
    if profile.built or settings.ANTHROPIC_API_KEY or not memory_on_for_user(user):
        return profile
    try:
        _rebuild(user, profile)
    except Exception:  # the page shows what it has; the memory server may be down
        logger.warning("profile of user %s not built offline", user.pk, exc_info=True)
    profile.refresh_from_db()
    return profile


def _headings_of() -> tuple[str, ...]:
    return (*sheet.titles(), *EARLIER_SECTIONS)


def _heading(title: str) -> str:
    return pgettext("profile section", "%(section)s:") % {"section": gettext(title)}


def for_reader(text: str) -> str:
    """The profile with its section headings in the active language ("Identité :" in French)."""
    return _headings(text, {f"{title}:": _heading(title) for title in _headings_of()})


def from_reader(text: str) -> str:
    """A profile the user saved, its translated headings back in English (as stored)."""
    return _headings(text, {_heading(title): f"{title}:" for title in _headings_of()})


def _headings(text: str, names: dict[str, str]) -> str:
    lines = []
    for line in text.split("\n"):
        said = next((name for name in names if line.startswith(name + " ")), None)
        lines.append(names[said] + line[len(said) :] if said else line)
    return "\n".join(lines)


def build(facts: list[dict]) -> str:
    """The profile of the stored facts (newest first): the person sheet, within budget."""
    return sheet.build(facts, budget=settings.MEMORY_PROFILE_MAX_CHARS)


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
    seen = UserProfile.objects.filter(pk=profile.pk).values_list("changes", flat=True).first() or 0
    found = services.get_recent_memories(user=user, limit=FACTS_READ, kinds=list(FACT_KINDS))
    facts = found.get("memories") or []
    UserProfile.objects.filter(pk=profile.pk).update(
        built=build(facts), built_at=timezone.now(), changes=Greatest(F("changes") - seen, 0)
    )
    logger.info("profile of user %s rebuilt from %d facts", user.pk, len(facts))
    if UserProfile.objects.filter(pk=profile.pk, changes__gt=0).exists():
        _queue_rebuild(user.pk)  # facts changed while this one read them: their own rebuild
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
