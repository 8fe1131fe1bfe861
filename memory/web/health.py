"""/memory/health: the memory health review (memory/learning/health.py) on the memory page, each
group with its preview and one action that deletes exactly what was previewed, with Undo.

A clean names its group and the ids its preview listed: ids that are not this user's
memories are refused (403, nothing deleted); ids no longer in the group (the memory
changed meanwhile) delete nothing and the review is shown again, to confirm in turn.
Deleted records are kept a few seconds for Undo, as a card deleted from the page is.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import trigger_client_event

from ikario_rag import contract
from memory.client import live, services
from memory.client import validation as check
from memory.client.errors import MemoryInputError, MemoryNotFound, MemoryServiceError
from memory.learning import health, kept_out
from memory.models import DeletedMemory
from memory.web.page import problem, undo_seconds

TEMPLATE = "memory/health.html"


def _groups(review: health.Review) -> list[dict]:
    """Each group's words for the page, with what it found."""
    words = {
        "duplicates": (
            _("Near-duplicates"),
            _("Facts that say what another one says; the one with the most detail stays."),
            _("Same as:"),
            _("Delete the duplicates"),
        ),
        "echoes": (
            _("Facts repeated from recalled ones"),
            _("Stored from a conversation after a near-identical memory was recalled in it."),
            _("Repeats:"),
            _("Delete the repeats"),
        ),
        "stale": (
            _("Passing states whose time is over"),
            _("A trip, an illness, a busy week: it held for a while, and no longer does."),
            _("Stored on"),
            _("Delete the stale states"),
        ),
        "secrets": (
            _("Likely secrets"),
            _("Passwords, codes, keys and card numbers should not stay in memory."),
            _("Looks like:"),
            _("Delete them"),
        ),
        "covered": (
            _("Transcripts covered by facts"),
            _("Saved conversations whose facts are all stored as facts; the facts stay."),
            _("Facts:"),
            _("Delete the transcripts"),
        ),
    }
    secret_names = kept_out.secret_names()
    out = []
    for key in health.GROUPS:
        title, explanation, why, action = words[key]
        found = review.groups.get(key, [])
        if key == "secrets":
            found = [
                health.Finding(f.id, f.content, secret_names.get(f.why, f.why), f.kind)
                for f in found
            ]
        if key == "stale":  # the day it was stored, as the rest of the app writes a date
            found = [replace(f, why=date_format(date.fromisoformat(f.why))) for f in found]
        out.append(
            {
                "key": key,
                "title": title,
                "explanation": explanation,
                "why": why,
                "action": action,
                "found": found,
            }
        )
    return out


def _render(request, context: dict, status: int = 200) -> HttpResponse:
    if context.get("review") is not None:
        context["groups"] = _groups(context["review"])
    return render(request, TEMPLATE, {"checked": True, **context}, status=status)


def _report(request, context: dict | None = None, status: int = 200) -> HttpResponse:
    context = dict(context or {})
    try:
        context["review"] = health.review(request.user)
    except MemoryServiceError as exc:
        context["error"] = problem(exc)
    return _render(request, context, status)


@login_required
@require_GET
def report(request):
    return _report(request)


def _owned(user, ids: list[str]) -> dict[str, dict]:
    """The records of these ids in this user's memory (with history, for Undo)."""
    found: dict[str, dict] = {}
    for start in range(0, len(ids), contract.MAX_IDS):
        chunk = ids[start : start + contract.MAX_IDS]
        records = services.get_memories(user=user, ids=chunk, with_history=True)
        found.update({m["id"]: m for m in records.get("memories") or [] if m.get("id") in chunk})
    return found


@login_required
@require_POST
def clean(request):
    group = request.POST.get("group", "")
    if group not in health.GROUPS:
        return _render(request, {"error": _("Unknown group.")}, status=400)
    try:
        ids = check.memory_ids("ids", request.POST.getlist("ids"), most=health.SCAN)
    except MemoryInputError as exc:
        return _render(request, {"error": problem(exc)}, status=400)
    try:
        records = _owned(request.user, ids)
    except (MemoryNotFound, MemoryInputError):
        records = {}  # the server names ids it does not hold in this namespace
    except MemoryServiceError as exc:
        return _render(request, {"error": problem(exc)})
    if len(records) < len(ids):
        return _render(request, {"error": _("Not found in your memory.")}, status=403)
    try:
        current = health.review(request.user)
    except MemoryServiceError as exc:
        return _render(request, {"error": problem(exc)})
    if not set(ids) <= current.ids(group):
        return _render(request, {"review": current, "changed": True})
    deleted, failed = [], None
    for memory_id in ids:
        try:
            services.delete_memory(user=request.user, memory_id=memory_id, reason="memory health")
        except MemoryNotFound:
            continue
        except MemoryServiceError as exc:
            failed = exc
            break
        deleted.append(memory_id)
    # Cleaned is cleaned: backfill and auto-save never store those transcripts again.
    health.transcripts_cleaned(request.user, [records[i] for i in deleted])
    DeletedMemory.keep(request.user, {i: records[i] for i in deleted})
    n = len(deleted)
    done = ngettext("%(n)d memory cleaned.", "%(n)d memories cleaned.", n) % {"n": n}
    context = {"done": done, "undo_ids": deleted, "undo_seconds": undo_seconds()}
    if failed is not None:
        context["error"] = problem(failed)
    else:
        live.toast(user=request.user, text=done)
    response = _report(request, context)
    return trigger_client_event(response, "memory-list-changed")


def _kept(request) -> tuple[list[str], list[DeletedMemory]]:
    ids = check.memory_ids("ids", request.POST.getlist("ids"), most=health.SCAN)
    return ids, DeletedMemory.undoable(request.user, ids)


@login_required
@require_POST
def undo(request):
    """Put back what a clean deleted (`ids`), within the undo window."""
    try:
        ids, kept = _kept(request)
    except MemoryInputError as exc:
        return _render(request, {"error": problem(exc)}, status=400)
    if not kept:
        return _report(request, {"error": _("Too late to undo: deleted for good.")})
    try:
        services.restore_memories(user=request.user, memories=[k.record for k in kept])
    except MemoryServiceError as exc:
        return _report(request, {"error": problem(exc)})
    DeletedMemory.objects.filter(user=request.user, memory_id__in=ids).delete()
    n = len(kept)
    undone = ngettext("%(n)d memory put back.", "%(n)d memories put back.", n) % {"n": n}
    response = _report(request, {"undone": undone})
    return trigger_client_event(response, "memory-list-changed")
    too_old = timezone.now() - timedelta(seconds=undo_seconds())
    DeletedMemory.objects.filter(
        user=request.user, memory_id__in=ids, deleted_at__lt=too_old
    ).delete()
    return HttpResponse("")
