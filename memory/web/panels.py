"""The memory's HTML fragments (htmx): header indicator, sidebar search, detail modal,
and the "save to memory" form under assistant messages.

A memory error becomes a message inside the fragment (status 200, so htmx swaps it in):
the chat page keeps working whatever state the memory server is in.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, render
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import trigger_client_event

from chat.models import Conversation
from ikario_rag import contract
from memory.client import controls, live, services
from memory.client.errors import (
    MemoryInputError,
    MemoryNotFound,
    MemoryOff,
    MemoryServiceError,
    sentence,
)
from memory.display import cards, categories, sources
from memory.learning.backup import ChatMemoryOff, KeptOutOfMemory, backup_conversation
from memory.models import MemorySettings

PANEL_RESULTS = 10
# How often the header indicator asks again: every second while the memory server starts
# (it turns live within a second of answering), soon after a failure, rarely once live.
POLL_SECONDS = {"starting": 1, "disconnected": 5, "saving_fails": 5, "connected": 30}


def _for_display(record: dict) -> dict:
    metadata = record.get("metadata") or {}
    try:
        detail_url = reverse("memory-detail", args=[record.get("id", "")])
    except NoReverseMatch:
        detail_url = ""
    score = record.get("relevance_score")
    category = metadata.get("category") or ""
    kind = metadata.get("kind") or ""
    return {
        "id": record.get("id", ""),
        "content": record.get("content", ""),
        # 0..1, drawn as the /memory page draws it (|score_class, |percent).
        "score": float(score) if isinstance(score, int | float) else None,
        "date": cards.when(metadata.get("date")),
        "category": category,
        "category_label": categories.label(category),
        "category_explanation": categories.explanation(category),
        "kind": str(cards.KIND_LABELS.get(kind, kind)),
        "tags": metadata.get("tags") or [],
        "concepts": metadata.get("concepts") or [],
        "emotions": metadata.get("emotions") or [],
        "source": metadata.get("source") or "",
        "detail_url": detail_url,
    }


def _score(value) -> float | None:
    """A relevance in 0..1 from the query string (None if absent or not one)."""
    try:
        score = float(value)
    except (TypeError, ValueError):
        return None
    return score if 0.0 <= score <= 1.0 else None


def _tooltip(stats: dict, *, paused=False, chat_off=False) -> str:
    if stats["status"] == "disabled":
        return _("Memory disabled")
    if stats["status"] == "off":
        return _("Memory off")
    if stats["status"] == "saving_fails":
        return _("Memory: saving fails")
    if chat_off:
        return _("Memory off in this chat")
    if stats["connected"]:
        total = stats["total_memories"]
        if total is None:  # the state known here, the figures still to come
            return _("Memory paused") if paused else _("Memory active")
        if paused:
            return ngettext(
                "Memory paused - %(total)s memory", "Memory paused - %(total)s memories", total
            ) % {"total": total}
        return ngettext(
            "Memory active - %(total)s memory", "Memory active - %(total)s memories", total
        ) % {"total": total}
    if stats["status"] == "starting":
        return _("Memory starting…")
    return _("Memory unavailable")


def _chat_of(request) -> Conversation | None:
    """The chat the page shows (`?conversation=`), when it is the user's; else none."""
    value = request.GET.get("conversation", "")
    if not value.isdigit() or len(value) > 18:
        return None
    return Conversation.objects.filter(pk=int(value), user=request.user).first()


@login_required
@require_GET
def indicator(request):
    """The header's memory state; on a chat page (`?conversation=`), that chat's too.

    `?quick=1`: only what this process knows (a pause, an outage), said at once; it then
    loads the full one, with the server's figures. `?was=down`: the previous one said
    the server was unavailable, so a connected one says "Memory is back", once."""
    quick = request.GET.get("quick") == "1"
    stats = (services.memory_state if quick else services.memory_stats)(user=request.user)
    chat = _chat_of(request)
    paused = controls.saving_paused(request.user.pk)
    chat_off = chat is not None and not controls.conversation_memory_on(chat)
    asked = {"conversation": chat.pk} if chat else {}
    if stats["status"] == "disconnected":
        asked["was"] = "down"  # the next one says whether it is back
    context = {
        "memory_stats": stats,
        "tooltip": _tooltip(stats, paused=paused, chat_off=chat_off),
        "paused": paused,
        "chat_off": chat_off,
        "chat": chat,
        # Off or disabled: nothing changes until the user does something elsewhere.
        "live": stats["status"] not in ("disabled", "off"),
        "error": sentence(stats.get("error") or ""),
        "poll": POLL_SECONDS.get(stats["status"], 30),
        "quick": quick,
        "next_url": reverse("memory-indicator") + (f"?{urlencode(asked)}" if asked else ""),
        "back": not quick and stats["connected"] and request.GET.get("was") == "down",
        "last_save": cards.when(stats.get("last_save")),
        "pulse": request.GET.get("pulse") == "1",
    }
    return render(request, "memory/indicator.html", context)


@login_required
@require_GET
def search(request):
    query = request.GET.get("q", "").strip()
    category = request.GET.get("category") or None
    context = {
        "query": query,
        "category": category,
        "results": [],
        "less_relevant": [],
        "total": 0,
        "error": "",
    }
    if query:
        try:
            _memory_on(request.user)
            found = services.search_memories(
                user=request.user, query=query, n_results=PANEL_RESULTS, filter_category=category
            )
            # Below contract.RELEVANT a memory is not about the query: counted, listed
            # only when the user asks for the rest.
            relevant, rest = cards.by_relevance(found.get("results") or [])
            context["results"] = [_for_display(r) for r in relevant]
            context["less_relevant"] = [_for_display(r) for r in rest]
            context["total"] = len(relevant) + len(rest)
        except MemoryInputError as exc:
            context["error"] = _("Cannot search: %(field)s %(reason)s.") % {
                "field": exc.field,
                "reason": exc.reason,
            }
        except MemoryServiceError as exc:
            context["error"] = exc.sentence
    return render(request, "memory/search_results.html", context)


def _memory_on(user) -> None:
    """MemoryOff when the user turned memory off (their widgets and API refuse too)."""
    if MemorySettings.turned_off(user):
        raise MemoryOff()


@login_required
@require_GET
def detail(request, memory_id: str):
    context = {"memory": None, "error": ""}
    status = 200
    try:
        _memory_on(request.user)
        record = services.get_memory(user=request.user, memory_id=memory_id)
        context["memory"] = sources.name_chats([_for_display(record)], request.user)[0]
        # Opened from a search result: its relevance to that search, drawn as there.
        context["memory"]["score"] = _score(request.GET.get("score"))
    except (MemoryNotFound, MemoryInputError):
        context["error"] = _("This memory does not exist (any more).")
        status = 200 if request.htmx else 404
    except MemoryServiceError as exc:
        context["error"] = exc.sentence
    return render(request, "memory/detail_modal.html", context, status=status)


@login_required
@require_POST
def save_conversation(request, conversation_id: int):
    conversation = get_object_or_404(Conversation, pk=conversation_id, user=request.user)
    message_id = request.POST.get("message_id", "")
    category = request.POST.get("category") or contract.DEFAULT_CATEGORY
    tags = [t.strip().lstrip("#") for t in request.POST.get("tags", "").split(",") if t.strip()]
    message = {"pk": message_id if message_id.isdigit() else "", "conversation_id": conversation.pk}
    context = {
        "message": message,
        "saved": False,
        "error": "",
        "category": category,
        "tags": request.POST.get("tags", ""),
    }
    try:
        result = backup_conversation(conversation, category=category, tags=tags or None)
    except ChatMemoryOff:
        context["error"] = _("Not saved: memory is off in this chat.")
    except KeptOutOfMemory:
        context["error"] = _(
            "Not saved: everything in this chat was said while memory was paused or off."
        )
    except MemoryInputError as exc:
        field = exc.field.removeprefix("context.").split("].context.")[-1]
        context["error"] = _("Not saved: %(field)s %(reason)s.") % {
            "field": field,
            "reason": exc.reason,
        }
    except MemoryServiceError as exc:
        context["error"] = _("Not saved: %(error)s.") % {"error": exc.message.rstrip(".")}
    else:
        context["saved"] = True
        context["status"] = "created" if result.saved else "duplicate"
    response = render(request, "memory/save_button.html", context)
    if context["saved"]:
        live.toast(user=request.user, text=_("Conversation saved to memory."))
        # Widgets listen for it (the header indicator pulses and recounts).
        trigger_client_event(
            response, "memory-saved", {"conversation": conversation.pk, "status": context["status"]}
        )
    return response
