""" "Why did Claude know this?": the memories auto-recall put in front of Claude for one
answer, from its retrieval log (memory_retrievals), with their text, scores and the tokens
they cost.

The log keeps ids and scores only (the memories' text is the memory server's); the text
is fetched now, through the services, so a memory deleted since is shown as deleted. Each
memory has its actions: not relevant here, correct, delete (memory/web/review/).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from chat.models import Message
from memory.client.errors import MemoryServiceError
from memory.models import MemoryRetrieval
from memory.recall.log import retrieval_for
from memory.web.page import problem
from memory.web.review import answer_sources


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
    """Each memory with its actions (memory/web/review/answer_sources.py)."""
    context = {"retrieval": retrieval, "memories": [], "error": ""}
    if retrieval is not None:
        try:
            context["memories"] = answer_sources.entries(request.user, "answer", retrieval.pk)
        except MemoryServiceError as exc:
            context["error"] = problem(exc)
    return render(request, "memory/recall_modal.html", context)
