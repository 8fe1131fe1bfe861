"""The memories under an answer ("Why did Claude know this?") or a whole conversation (its
menu), each with three actions: *Not relevant here* (kept, and left out of recall for
requests like the ones it was given for: memory/recall/not_relevant.py), *Correct* (edited in
place, the memory server keeps the old version in its history) and *Delete* (with Undo,
memory/web/page.py's). Each action answers with the memory's entry, swapped in place.

A scope is where the memory was recalled: "answer" (one retrieval log row) or "chat" (every
retrieval of one conversation); only the user's own, else 404.
"""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import pgettext_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from chat.models import Conversation
from ikario_rag import contract
from memory.client import services
from memory.client.errors import MemoryNotFound, MemoryServiceError
from memory.display import cards
from memory.models import MemoryRetrieval, NotRelevantRecall
from memory.recall import not_relevant
from memory.web import page

ENTRY = "memory/source_entry.html"


class CorrectionForm(forms.Form):
    content = forms.CharField(
        label=pgettext_lazy("one memory", "Memory"),
        max_length=contract.MAX_CONTENT,
        widget=forms.Textarea(attrs={"rows": 3}),
    )


def _retrievals(user, scope: str, scope_id: int):
    if scope == "answer":
        found = MemoryRetrieval.objects.filter(pk=scope_id, user=user)
    elif scope == "chat":
        if not Conversation.objects.filter(pk=scope_id, user=user).exists():
            raise Http404("No such conversation")
        found = MemoryRetrieval.objects.filter(conversation_id=scope_id, user=user)
    else:
        raise Http404("No such scope")
    return list(found.exclude(memories=[]).order_by("id"))


def recalled(user, scope: str, scope_id: int) -> dict[str, dict]:
    """{memory_id: {"score": best, "queries": [the requests it was given for]}}, in order."""
    out: dict[str, dict] = {}
    for retrieval in _retrievals(user, scope, scope_id):
        for logged in retrieval.memories or []:
            memory_id = logged.get("id") if isinstance(logged, dict) else None
            if not memory_id:
                continue
            seen = out.setdefault(memory_id, {"score": None, "queries": []})
            score = logged.get("score")
            if score is not None and (seen["score"] is None or score > seen["score"]):
                seen["score"] = score
            if retrieval.query not in seen["queries"]:
                seen["queries"].append(retrieval.query)
    return out


def entries(user, scope: str, scope_id: int, *, found: dict[str, dict] | None = None):
    """The entries of a scope: each memory recalled there, with its card (None: deleted)."""
    logged = recalled(user, scope, scope_id)
    if found is None:
        found = {}
        ids = list(logged)
        for start in range(0, len(ids), contract.MAX_IDS):
            try:
                got = services.get_memories(user=user, ids=ids[start : start + contract.MAX_IDS])
            except MemoryNotFound:
                continue  # all of them were deleted since
            found.update({m.get("id"): m for m in got.get("memories") or []})
    dismissed = _dismissed(user, logged)
    return [
        {
            "id": memory_id,
            "score": seen["score"],
            "card": cards.card(found[memory_id]) if memory_id in found else None,
            "deleted": memory_id not in found,
            "not_relevant": memory_id in dismissed,
            "scope": scope,
            "scope_id": scope_id,
        }
        for memory_id, seen in logged.items()
    ]


def _dismissed(user, logged: dict[str, dict]) -> set[str]:
    """The memories marked not relevant to every request of the scope they were given for."""
    rows = NotRelevantRecall.objects.filter(user=user, memory_id__in=list(logged))
    marked: dict[str, set[str]] = {}
    for memory_id, query in rows.values_list("memory_id", "query"):
        marked.setdefault(memory_id, set()).add(query)
    return {m for m, seen in logged.items() if set(seen["queries"]) <= marked.get(m, set())}


def _entry(request, scope, scope_id, memory_id, *, status=200, **shown):
    logged = recalled(request.user, scope, scope_id)
    if memory_id not in logged:
        raise Http404("Not recalled here")
    try:
        got = services.get_memories(user=request.user, ids=[memory_id])
        found = {m.get("id"): m for m in got.get("memories") or []}
    except MemoryNotFound:
        found = {}
    except MemoryServiceError as exc:
        shown["error"] = page.problem(exc)
        found = {}
    entry = next(
        e for e in entries(request.user, scope, scope_id, found=found) if e["id"] == memory_id
    )
    if shown.get("error"):
        entry["deleted"] = False
    return render(request, ENTRY, {"entry": entry, **shown}, status=status)


@login_required
@require_GET
def conversation_sources(request, conversation_id: int):
    """Every memory recalled in one conversation, for its menu."""
    conversation = Conversation.objects.filter(pk=conversation_id, user=request.user).first()
    if conversation is None:
        raise Http404("No such conversation")
    context = {"conversation": conversation, "memories": [], "error": ""}
    try:
        context["memories"] = entries(request.user, "chat", conversation_id)
    except MemoryServiceError as exc:
        context["error"] = page.problem(exc)
    return render(request, "memory/conversation_sources.html", context)


@login_required
@require_POST
def mark_not_relevant(request, scope: str, scope_id: int, memory_id: str):
    logged = recalled(request.user, scope, scope_id)
    if memory_id not in logged:
        raise Http404("Not recalled here")
    for query in logged[memory_id]["queries"]:
        not_relevant.mark(user=request.user, memory_id=memory_id, query=query)
    return _entry(request, scope, scope_id, memory_id, done=_("Not recalled for this again."))


@login_required
@require_POST
def mark_relevant(request, scope: str, scope_id: int, memory_id: str):
    """Undo a "not relevant here"."""
    logged = recalled(request.user, scope, scope_id)
    for query in logged.get(memory_id, {}).get("queries", []):
        not_relevant.unmark(user=request.user, memory_id=memory_id, query=query)
    return _entry(request, scope, scope_id, memory_id)


@login_required
@require_http_methods(["GET", "POST"])
def correct(request, scope: str, scope_id: int, memory_id: str):
    """GET: the entry with its correction form; POST: the memory edited in place."""
    if request.method == "GET":
        try:
            record = services.get_memory(user=request.user, memory_id=memory_id)
        except MemoryServiceError as exc:
            return _entry(request, scope, scope_id, memory_id, error=page.problem(exc))
        form = CorrectionForm(initial={"content": record.get("content", "")})
        return _entry(request, scope, scope_id, memory_id, form=form)
    form = CorrectionForm(request.POST)
    if not form.is_valid():
        return _entry(request, scope, scope_id, memory_id, form=form, status=400)
    if memory_id not in recalled(request.user, scope, scope_id):
        raise Http404("Not recalled here")
    try:
        result = services.update_memory(
            user=request.user, memory_id=memory_id, content=form.cleaned_data["content"]
        )
    except MemoryServiceError as exc:
        return _entry(request, scope, scope_id, memory_id, form=form, error=page.problem(exc))
    done = _("Corrected.") if result.get("status") == "updated" else _("Unchanged.")
    return _entry(request, scope, scope_id, memory_id, done=done)


@login_required
@require_POST
def delete(request, scope: str, scope_id: int, memory_id: str):
    if memory_id not in recalled(request.user, scope, scope_id):
        raise Http404("Not recalled here")
    try:
        page.delete_keeping_undo(request.user, memory_id)
    except MemoryServiceError as exc:
        return _entry(request, scope, scope_id, memory_id, error=page.problem(exc))
    return _entry(request, scope, scope_id, memory_id, just_deleted=True)


@login_required
@require_POST
def undo(request, scope: str, scope_id: int, memory_id: str):
    try:
        undone = page.undo_delete(request.user, memory_id)
    except MemoryServiceError as exc:
        return _entry(request, scope, scope_id, memory_id, error=page.problem(exc))
    if not undone:
        return _entry(request, scope, scope_id, memory_id, error=_("Too late to undo."))
    return _entry(request, scope, scope_id, memory_id)


@login_required
@require_GET
def source(request, scope: str, scope_id: int, memory_id: str):
    """One entry as it stands (a correction cancelled)."""
    return _entry(request, scope, scope_id, memory_id)
