"""The memory page's tools: forget a topic (a dry run first, then only what was shown),
check a statement's consistency, trace a concept, export and import (a background job,
memory/jobs.py, whose progress the page follows).

Each answers with its fragment of memory/page.html; bad input is a 400 fragment naming
the field (the forms carry data-swap-invalid, so htmx swaps it in).
"""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import trigger_client_event

from memory import cards, jobs, live, services, transfer
from memory import validation as check
from memory.errors import MemoryBusy, MemoryInputError, MemoryNotFound, MemoryServiceError
from memory.models import MemoryJob
from memory.page_forms import ConsistencyForm, ForgetTopicForm, ImportForm, TraceForm
from memory.page_views import PAGE, problem

# The most a topic's preview lists (forget's own cap: one hybrid search of 100).
FORGET_MOST = 100


def _fragment(request, name: str, context: dict, status: int = 200) -> HttpResponse:
    return render(request, f"{PAGE}#{name}", context, status=status)


@login_required
@require_POST
def forget(request):
    """Step 1 (`topic`): what would go, nothing deleted. Step 2 (`confirm` + the ids shown):
    exactly those are deleted, whatever the topic would match by then."""
    form = ForgetTopicForm(request.POST)
    if not form.is_valid():
        return _fragment(request, "forget", {"forget_form": form}, status=400)
    topic = form.cleaned_data["topic"]
    if request.POST.get("confirm") != "1":
        try:
            preview = services.forget(user=request.user, topic=topic, dry_run=True)
        except MemoryServiceError as exc:
            form.add_error("topic", problem(exc))
            return _fragment(request, "forget", {"forget_form": form}, status=400)
        doomed = (preview.get("removed") or [])[:FORGET_MOST]
        context = {"forget_form": form, "preview": doomed, "topic": topic}
        return _fragment(request, "forget", context)
    try:
        ids = check.memory_ids("ids", request.POST.getlist("ids"), most=FORGET_MOST)
    except MemoryInputError as exc:
        form.add_error(None, problem(exc))
        return _fragment(request, "forget", {"forget_form": form}, status=400)
    forgotten = 0
    for memory_id in ids:
        try:
            services.delete_memory(user=request.user, memory_id=memory_id, reason="forget a topic")
            forgotten += 1
        except MemoryNotFound:
            continue  # gone meanwhile
        except MemoryServiceError as exc:
            form.add_error(None, problem(exc))
            return _fragment(request, "forget", {"forget_form": form, "forgotten": forgotten})
    text = ngettext(
        "%(n)d memory about “%(topic)s” forgotten.",
        "%(n)d memories about “%(topic)s” forgotten.",
        forgotten,
    ) % {"n": forgotten, "topic": topic}
    live.toast(user=request.user, text=text)
    context = {"forget_form": ForgetTopicForm(), "forgotten": forgotten, "done": text}
    response = _fragment(request, "forget", context)
    return trigger_client_event(response, "memory-list-changed")


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
    context["timeline"] = [
        {
            "id": entry.get("id", ""),
            "date": cards.when(entry.get("date")),
            "content": entry.get("content", ""),
            "evolution": entry.get("evolution") or "",
        }
        for entry in found.get("timeline") or []
    ]
    context["concept"] = form.cleaned_data["concept"]
    return _fragment(request, "trace", context)


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


def busy_or_invalid(exc: MemoryServiceError) -> int:
    return 429 if isinstance(exc, MemoryBusy) else 400


def accepted(response: HttpResponse, job: MemoryJob) -> HttpResponse:
    """202: the work goes on; Location is where to follow it (JSON)."""
    response.status_code = 202
    response["Location"] = reverse("memory_api:job", args=[job.pk])
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
