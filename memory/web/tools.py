"""The memory page's tools: forget a topic (a dry run first, then only what was shown, with
Undo), check a statement's consistency, trace a concept, export and import (a background job,
memory/client/jobs.py, whose progress the page follows).

Each answers with its fragment of memory/page.html; bad input is a 400 fragment naming
the field (the forms carry data-swap-invalid, so htmx swaps it in).
"""

from __future__ import annotations

import json
from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import trigger_client_event

from ikario_rag import contract
from memory.client import jobs, live, services, transfer
from memory.client import validation as check
from memory.client.errors import MemoryBusy, MemoryInputError, MemoryNotFound, MemoryServiceError
from memory.display import cards, versions
from memory.display.forms import (
    ConsistencyForm,
    ForgetTopicForm,
    HistoryImportForm,
    ImportForm,
    TraceForm,
)
from memory.history import importing
from memory.models import DeletedMemory, MemoryJob
from memory.web.page import PAGE, problem, undo_seconds

# The most a topic's preview lists (forget's own cap: one hybrid search of 100).
FORGET_MOST = 100


def _fragment(request, name: str, context: dict, status: int = 200) -> HttpResponse:
    return render(request, f"{PAGE}#{name}", context, status=status)


@login_required
@require_POST
def forget(request):
    """Step 1 (`topic`): what would go, nothing deleted. Step 2 (`confirm`, the topic the
    preview was for as `previewed`, the ids it listed): exactly those are deleted, kept for
    Undo as a deleted card is, if the topic still finds every one of them in this user's
    memory. Otherwise (another topic typed since, ids from elsewhere or no longer found)
    nothing is deleted and the topic's preview is shown, to confirm in turn."""
    form = ForgetTopicForm(request.POST)
    if not form.is_valid():
        return _fragment(request, "forget", {"forget_form": form}, status=400)
    topic = form.cleaned_data["topic"]
    previewed = request.POST.get("previewed", topic).strip()
    confirmed = request.POST.get("confirm") == "1" and previewed == topic
    ids: list[str] = []
    try:
        if confirmed:
            ids = check.memory_ids("ids", request.POST.getlist("ids"), most=FORGET_MOST)
        about = _about(request.user, topic)
        # A confirmation whose ids the topic does not all find now (in this user's memory)
        # was not for what the topic would delete: it is shown again, nothing deleted.
        changed = confirmed and not set(ids) <= {m.get("id") for m in about}
        if not confirmed or changed:
            context = {"forget_form": form, "preview": about, "topic": topic, "changed": changed}
            return _fragment(request, "forget", context)
        records = _records(request.user, ids)
    except MemoryServiceError as exc:
        form.add_error("topic" if not confirmed else None, problem(exc))
        return _fragment(request, "forget", {"forget_form": form}, status=400)
    forgotten = []
    failed = None
    for memory_id in ids:
        try:
            services.delete_memory(user=request.user, memory_id=memory_id, reason="forget a topic")
        except MemoryNotFound:
            continue  # gone meanwhile
        except MemoryServiceError as exc:
            failed = exc
            break
        forgotten.append(memory_id)
        if memory_id in records:
            _keep_for_undo(request.user, memory_id, records[memory_id])
    text = ngettext(
        "%(n)d memory about “%(topic)s” forgotten.",
        "%(n)d memories about “%(topic)s” forgotten.",
        len(forgotten),
    ) % {"n": len(forgotten), "topic": topic}
    context = {
        "forget_form": ForgetTopicForm(),
        "done": text,
        "undo_ids": forgotten,
        "undo_seconds": undo_seconds(),
    }
    if failed is not None:
        context["forget_form"] = form
        form.add_error(None, problem(failed))
    else:
        live.toast(user=request.user, text=text)
    response = _fragment(request, "forget", context)
    return trigger_client_event(response, "memory-list-changed")


def _about(user, topic: str) -> list[dict]:
    """The memories forgetting `topic` would delete (a dry run), at most FORGET_MOST."""
    preview = services.forget(user=user, topic=topic, dry_run=True)
    return (preview.get("removed") or [])[:FORGET_MOST]


def _records(user, ids: list[str]) -> dict[str, dict]:
    """The whole records (with history) of these ids, for Undo to put them back as they were."""
    if not ids:
        return {}
    found = services.get_memories(user=user, ids=ids, with_history=True)
    return {m["id"]: m for m in found.get("memories") or [] if m.get("id") in ids}


def _keep_for_undo(user, memory_id: str, record: dict) -> None:
    DeletedMemory.keep(user, {memory_id: record})


def _kept(user, request) -> tuple[list[str], list[DeletedMemory]]:
    """The forget's ids the request names, and their records still within the undo window."""
    ids = check.memory_ids("ids", request.POST.getlist("ids"), most=FORGET_MOST)
    return ids, DeletedMemory.undoable(user, ids)


@login_required
@require_POST
def forget_undo(request):
    """Put back the memories a forget deleted (`ids`), within the same window as a delete."""
    context = {"forget_form": ForgetTopicForm()}
    try:
        ids, kept = _kept(request.user, request)
    except MemoryInputError as exc:
        context["undo_error"] = problem(exc)
        return _fragment(request, "forget", context, status=400)
    if not kept:
        context["undo_error"] = _("Too late to undo: deleted for good.")
        return _fragment(request, "forget", context)
    try:
        services.restore_memories(user=request.user, memories=[k.record for k in kept])
    except MemoryServiceError as exc:
        context["undo_error"] = problem(exc)
        return _fragment(request, "forget", context)
    DeletedMemory.objects.filter(user=request.user, memory_id__in=ids).delete()
    n = len(kept)
    context["undone"] = ngettext("%(n)d memory put back.", "%(n)d memories put back.", n) % {"n": n}
    response = _fragment(request, "forget", context)
    return trigger_client_event(response, "memory-list-changed")
    too_old = timezone.now() - timedelta(seconds=undo_seconds())
    DeletedMemory.objects.filter(
        user=request.user, memory_id__in=ids, deleted_at__lt=too_old
    ).delete()
    return HttpResponse("")


@login_required
@require_POST
def consistency(request):
    form = ConsistencyForm(request.POST)
    context = {"consistency_form": form}
    if not form.is_valid():
        return _fragment(request, "consistency", context, status=400)
    try:
        result = services.check_consistency(
            user=request.user, statement=form.cleaned_data["statement"]
        )
    except MemoryServiceError as exc:
        form.add_error("statement", problem(exc))
        return _fragment(request, "consistency", context, status=400)
    context["result"] = {
        "score": float(result.get("consistency_score") or 0.0),
        "contradictions": [_finding(f) for f in result.get("contradictions") or []],
        "supporting": [_finding(f) for f in result.get("supporting") or []],
        "undetermined": [_finding(f) for f in result.get("undetermined") or []],
        "verdict": result.get("verdict", ""),
        "judged_by": result.get("judged_by", ""),
        "judge_error": bool(result.get("judge_error")),
    }
    return _fragment(request, "consistency", context)


def _finding(found: dict) -> dict:
    return {
        "id": found.get("id", ""),
        "content": found.get("content", ""),
        "date": cards.when(found.get("date")),
        "score": found.get("score") if isinstance(found.get("score"), int | float) else None,
        "reason": found.get("reason", ""),
    }


@login_required
@require_GET
def trace(request):
    """The concept's timeline, oldest first (`?concept=`; a card's Trace names its own)."""
    form = TraceForm(request.GET)
    context = {"trace_form": form, "timeline": None}
    if not form.is_valid():
        return _fragment(request, "trace", context, status=400)
    try:
        found = services.trace_concept_evolution(
            user=request.user, concept=form.cleaned_data["concept"], limit=20
        )
    except MemoryServiceError as exc:
        form.add_error("concept", problem(exc))
        return _fragment(request, "trace", context, status=400)
    # Each version said against the one before it, in words (memory/display/versions.py); the
    # server's own `evolution` is a list of word tokens, not for people.
    entries = found.get("timeline") or []
    context["timeline"] = versions.timeline(entries, _histories(request.user, entries))
    context["concept"] = form.cleaned_data["concept"]
    return _fragment(request, "trace", context)


def _histories(user, entries: list[dict]) -> dict[str, list[dict]]:
    """The earlier versions of the traced memories, by id ({} when they cannot be read:
    the trace then shows each memory as it reads now)."""
    ids = [entry["id"] for entry in entries if entry.get("id")][: contract.MAX_IDS]
    if not ids:
        return {}
    try:
        found = services.get_memories(user=user, ids=ids, with_history=True)
    except MemoryServiceError:
        return {}
    return {
        record.get("id", ""): [h for h in record.get("history") or [] if isinstance(h, dict)]
        for record in found.get("memories") or []
    }


@login_required
@require_GET
def export(request):
    """All of the user's memories as a JSON download."""
    try:
        exported = transfer.export_memories(user=request.user)
    except MemoryServiceError as exc:
        return HttpResponse(problem(exc), status=503, content_type="text/plain; charset=utf-8")
    response = HttpResponse(
        json.dumps(exported, ensure_ascii=False, indent=1),
        content_type="application/json; charset=utf-8",
    )
    name = f"ikario-memories-{timezone.now():%Y-%m-%d}.json"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
@require_POST
def import_file(request):
    """The file checked now (400 naming what is wrong), imported by a background job: 202
    with the job's progress, which follows itself (`job`)."""
    form = ImportForm(request.POST, request.FILES)
    context = {"import_form": form}
    if not form.is_valid():
        return _fragment(request, "import", context, status=400)
    upload = form.cleaned_data["file"]
    if upload.size > transfer.max_bytes():
        # Read no further than the limit: the size is what is wrong.
        data = upload.read(transfer.max_bytes() + 1)
    else:
        data = upload.read()
    try:
        job = jobs.start_import(user=request.user, request=request, data=data)
    except MemoryServiceError as exc:
        form.add_error("file", problem(exc))
        return _fragment(request, "import", context, status=busy_or_invalid(exc))
    context.update(job=job, import_form=ImportForm())
    return accepted(_fragment(request, "import", context), job)


@login_required
@require_POST
def import_history(request):
    """Another assistant's export, received to disk chunk by chunk, sniffed now (400 naming
    what is wrong), imported by a background job: 202 with its progress, which follows
    itself (`job`) to the summary."""
    form = HistoryImportForm(request.POST, request.FILES)
    context = {"history_form": form}
    if not form.is_valid():
        return _fragment(request, "history", context, status=400)
    try:
        path = importing.receive(form.cleaned_data["file"])
        job = importing.start(user=request.user, request=request, path=path)
    except MemoryServiceError as exc:
        form.add_error("file", getattr(exc, "reason", "") or problem(exc))
        return _fragment(request, "history", context, status=busy_or_invalid(exc))
    context.update(history_job=job, history_form=HistoryImportForm())
    return accepted(_fragment(request, "history", context), job)


def busy_or_invalid(exc: MemoryServiceError) -> int:
    return 429 if isinstance(exc, MemoryBusy) else 400


def accepted(response: HttpResponse, job: MemoryJob) -> HttpResponse:
    """202: the work goes on; Location is where to follow it (JSON)."""
    response.status_code = 202
    response["Location"] = reverse("api:memory-job", args=[job.pk])
    return response


@login_required
@require_GET
def job(request, job_id: int):
    """An import's or a reset's progress (memory/job.html polls it until it ends)."""
    found = get_object_or_404(MemoryJob, pk=job_id, user=request.user)
    response = render(request, "memory/job.html", {"job": found})
    if found.state == MemoryJob.State.DONE:
        return trigger_client_event(response, "memory-list-changed")
    return response
