""" "Why did Claude know this?": the memories auto-recall put in front of Claude for one
answer, from its retrieval log (memory_retrievals), with their text, scores and the tokens
they cost.

The log keeps ids and scores only (the memories' text is the memory server's); the text
is fetched now, through the services, so a memory deleted since is shown as deleted.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from chat.models import Message
from memory.client import services
from memory.client.errors import MemoryNotFound, MemoryServiceError
from memory.display import cards
from memory.models import MemoryRetrieval
from memory.recall.log import retrieval_for
from memory.web.page import problem


@login_required
@require_GET
def recall(request, message_id: int):
    answer = (
        Message.objects.select_related("conversation")
        .filter(pk=message_id, role=Message.Role.ASSISTANT, conversation__user=request.user)
        .first()
    )
    if answer is None:
        raise Http404("No such answer")
    return _recall(request, retrieval_for(answer))


@login_required
@require_GET
def logged_recall(request, retrieval_id: int):
    """The same from a row of the retrieval log (the memory settings page)."""
    retrieval = MemoryRetrieval.objects.filter(pk=retrieval_id, user=request.user).first()
    if retrieval is None:
        raise Http404("No such recall")
    return _recall(request, retrieval)


def _recall(request, retrieval: MemoryRetrieval | None):
    context = {"retrieval": retrieval, "memories": [], "error": ""}
    logged = retrieval.memories if retrieval else []
    ids = [m.get("id") for m in logged if isinstance(m, dict) and m.get("id")]
    found: dict[str, dict] = {}
    if ids:
        try:
            got = services.get_memories(user=request.user, ids=ids)
            found = {m.get("id"): m for m in got.get("memories") or []}
        except MemoryNotFound:
            found = {}  # every one of them was deleted since
        except MemoryServiceError as exc:
            context["error"] = problem(exc)
    for entry in logged:
        memory_id = entry.get("id") if isinstance(entry, dict) else None
        record = found.get(memory_id)
        context["memories"].append(
            {
                "id": memory_id,
                "score": entry.get("score") if isinstance(entry, dict) else None,
                "card": cards.card(record) if record else None,
                "deleted": record is None and not context["error"],
            }
        )
    return render(request, "memory/recall_modal.html", context)
