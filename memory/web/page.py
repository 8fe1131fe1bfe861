"""/memory: every memory of the user's, browsed, searched, edited, deleted (with undo)
and traced, with the profile, the controls, the counts and the memory's own tools around
it (memory/web/tools.py, memory/web/controls.py).

One template, memory/page.html, with a named fragment per region; an htmx request gets
only its fragment. Every operation goes through memory/client/services.py with the signed-in
user, so it only ever reaches that user's namespace; another user's memory id is "not
found". A memory error becomes a message in the fragment, never a 500.
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from memory.client import controls, live, mcp, services
from memory.client import validation as check
from memory.client.errors import (
    MemoryBusy,
    MemoryDisabled,
    MemoryInputError,
    MemoryNotFound,
    MemoryServiceError,
)
from memory.display import cards, sources
from memory.display.fact_forms import AddFactForm
from memory.display.forms import (
    MODES,
    PAGE_SIZE,
    ConsistencyForm,
    ForgetTopicForm,
    HistoryImportForm,
    ImportForm,
    MemoryEditForm,
    MemoryFilterForm,
    TraceForm,
    reset_phrase,
)
from memory.learning import kept_out
from memory.learning import profile as profiles
from memory.learning.health import SCAN
from memory.models import DeletedMemory, MemoryJob
from memory.web import notes
from memory.web.profile import ProfileForm

logger = logging.getLogger("memory.page")

MODE_LABELS = dict(MODES)
SEARCH_RESULTS = 50  # best matches a search on the page shows
PAGE = "memory/page.html"


# Memories a card's, a forget's or a health clean's Undo holds at most (a clean's SCAN).
UNDO_MOST = SCAN


def undo_seconds() -> float:
    return float(settings.MEMORY_UNDO_SECONDS)


def problem(exc: MemoryServiceError) -> str:
    """What the user reads when the memory could not do it."""
    if isinstance(exc, MemoryInputError):
        return _("%(field)s: %(reason)s") % {"field": exc.field, "reason": exc.reason}
    if isinstance(exc, MemoryNotFound):
        return _("This memory does not exist (any more).")
    if isinstance(exc, MemoryDisabled):
        return _("Memory is off on this server.")
    if isinstance(exc, MemoryBusy):
        return _("Not now: %(why)s. Try again in %(seconds)d s.") % {
            "why": exc.message,
            "seconds": exc.retry_after,
        }
    return _("Memory unavailable: %(why)s") % {"why": exc.message}


# --- the list ----------------------------------------------------------------------------


def listing(user, form: MemoryFilterForm) -> dict:
    """The list region's context: cards, paging, what is shown, or the error."""
    found = {
        "cards": [],
        "less_relevant": [],
        "total": 0,
        "page": 1,
        "pages": 1,
        "searching": False,
        "error": "",
    }
    if not form.is_valid():
        field, errors = next(iter(form.errors.items()))
        label = form.fields[field].label if field in form.fields else field
        found["error"] = f"{label}: {errors[0]}"
        return found
    if not mcp.memory_enabled():
        return found  # the page says memory is off, once
    data = form.cleaned_data
    kinds = [data["kind"]] if data["kind"] else None
    tags = [data["tag"].strip().lstrip("#")] if data["tag"].strip() else None
    date_from = data["date_from"].isoformat() if data["date_from"] else None
    date_to = f"{data['date_to'].isoformat()}T23:59:59" if data["date_to"] else None
    try:
        if data["q"]:
            found["searching"] = True
            result = services.search_memories(
                user=user,
                query=data["q"],
                n_results=SEARCH_RESULTS,
                filter_category=data["category"] or None,
                kinds=kinds,
                tags=tags,
                mode=data["mode"],
                date_from=date_from,
                date_to=date_to,
            )
            records = [
                r
                for r in result.get("results") or []
                if not data["source"]
                or str((r.get("metadata") or {}).get("source") or "").startswith(data["source"])
            ]
            records, rest = cards.by_relevance(records)
            found["less_relevant"] = [cards.card(r) for r in rest]
            found.update(total=len(records) + len(rest))
            found.update(mode_used=MODE_LABELS.get(result.get("mode_used")))
        else:
            page = services.list_memories(
                user=user,
                offset=(data["page"] - 1) * PAGE_SIZE,
                limit=PAGE_SIZE,
                kinds=kinds,
                category=data["category"] or None,
                tags=tags,
                date_from=date_from,
                date_to=date_to,
                source_prefix=data["source"] or None,
            )
            records = page.get("memories") or []
            total = page.get("total", 0)
            found.update(total=total, page=data["page"], pages=max(1, -(-total // PAGE_SIZE)))
    except MemoryServiceError as exc:
        found["error"] = problem(exc)
        return found
    found["cards"] = sources.name_chats([cards.card(r) for r in records], user)
    return found


def _query(form: MemoryFilterForm, **changes) -> str:
    """The filters as a query string (for paging links and the live socket)."""
    if not form.is_bound or not form.is_valid():
        return urlencode(changes)
    values = {k: v for k, v in form.data.items() if k in form.fields and v not in ("", None)}
    values.update({k: v for k, v in changes.items()})
    return urlencode({k: v for k, v in values.items() if v not in ("", None)})


def list_context(request, form: MemoryFilterForm) -> dict:
    context = listing(request.user, form)
    page = context["page"]
    context.update(
        filters=form,
        live_query=_query(form, page=""),
        newer_query=_query(form, page=page - 1) if page > 1 else "",
        older_query=_query(form, page=page + 1) if page < context["pages"] else "",
    )
    return context


@login_required
@require_GET
@vary_on_headers("HX-Request")
def memory_page(request: HttpRequest) -> HttpResponse:
    form = MemoryFilterForm(request.GET)
    context = list_context(request, form)
    status = 400 if form.is_bound and form.errors else 200
    if request.htmx:
        return render(request, f"{PAGE}#memory_list", context, status=status)
    context.update(page_extras(request.user))
    return render(request, PAGE, context, status=status)


def page_extras(user) -> dict:
    """What the page shows around the list: controls, profile, counts, tool forms."""
    return {
        "memory_on": mcp.memory_enabled(),
        "memory_settings": controls.settings_of(user),
        "reference_past_chats": controls.reference_past_chats(user),
        "profile": profiles.ensure_built(user),
        "profile_form": None,
        "stats": services.memory_stats(user=user),
        "forget_form": ForgetTopicForm(),
        "consistency_form": ConsistencyForm(),
        "trace_form": TraceForm(),
        "import_form": ImportForm(),
        "history_form": HistoryImportForm(),
        "history_job": MemoryJob.objects.filter(user=user, kind=MemoryJob.Kind.HISTORY)
        .order_by("-pk")
        .first(),
        "reset_phrase": reset_phrase(),
        "fact_form": AddFactForm(),
        **notes.section_context(user),
    }


@login_required
@require_GET
def counts(request):
    return render(request, f"{PAGE}#counts", {"stats": services.memory_stats(user=request.user)})


# --- one memory: its card, edit, delete and undo ---------------------------------------


def _card_error(request, memory_id: str, error: str) -> HttpResponse:
    return render(request, f"{PAGE}#card_error", {"memory_id": memory_id, "error": error})


def _card_response(request, memory_id: str, *, editing=None, status=200) -> HttpResponse:
    try:
        record = services.get_memories(user=request.user, ids=[memory_id], with_history=True)
        found = [m for m in record.get("memories") or [] if m.get("id") == memory_id]
        if not found:
            raise MemoryNotFound()
    except MemoryServiceError as exc:
        return _card_error(request, memory_id, problem(exc))
    memory = sources.name_chats([cards.card(found[0])], request.user)[0]
    if editing is None and request.GET.get("edit") == "1":
        editing = MemoryEditForm(
            initial={
                "content": memory["content"],
                "category": memory["category"],
                "tags": ", ".join(memory["tags"]),
            }
        )
    return render(request, f"{PAGE}#card", {"m": memory, "edit_form": editing}, status=status)


@login_required
@require_GET
def card(request, memory_id: str):
    """The card (`?edit=1`: with its edit form in place)."""
    return _card_response(request, memory_id)


@login_required
@require_POST
def edit(request, memory_id: str):
    form = MemoryEditForm(request.POST)
    if not form.is_valid():
        return _card_response(request, memory_id, editing=form, status=400)
    try:
        result = services.update_memory(
            user=request.user,
            memory_id=memory_id,
            content=form.cleaned_data["content"],
            category=form.cleaned_data["category"],
            tags=form.cleaned_data["tags"],
        )
    except MemoryServiceError as exc:
        if isinstance(exc, MemoryInputError):
            form.add_error(None, problem(exc))
            return _card_response(request, memory_id, editing=form, status=400)
        return _card_error(request, memory_id, problem(exc))
    if result.get("status") == "updated":
        updated = _("Memory updated.")
        kept = kept_out.secrets_line(result.get("kept_out"))
        live.toast(user=request.user, text=f"{updated} {kept}".strip())
    return _card_response(request, memory_id)


def delete_keeping_undo(user, memory_id: str) -> None:
    """Delete at once, and keep the whole record (with its history) for Undo a few seconds;
    MemoryNotFound for a memory that is not the user's."""
    found = services.get_memories(user=user, ids=[memory_id], with_history=True)
    record = next((m for m in found.get("memories") or [] if m.get("id") == memory_id), None)
    if record is None:
        raise MemoryNotFound()
    services.delete_memory(user=user, memory_id=memory_id, reason="memory page")
    DeletedMemory.keep(user, {memory_id: record})


def undo_delete(user, memory_id: str) -> bool:
    """Put a memory deleted with `delete_keeping_undo` back, same id; False when too late."""
    kept = next(iter(DeletedMemory.undoable(user, [memory_id])), None)
    if kept is None:
        return False
    services.restore_memories(user=user, memories=[kept.record])
    DeletedMemory.objects.filter(user=user, memory_id=memory_id).delete()
    return True


@login_required
@require_POST
def delete(request, memory_id: str):
    """Delete at once, and keep the record for Undo a few seconds."""
    try:
        delete_keeping_undo(request.user, memory_id)
    except MemoryServiceError as exc:
        return _card_error(request, memory_id, problem(exc))
    context = {"memory_id": memory_id, "undo_seconds": undo_seconds()}
    return render(request, f"{PAGE}#undo", context)


@login_required
@require_POST
def undo(request, memory_id: str):
    try:
        undone = undo_delete(request.user, memory_id)
    except MemoryServiceError as exc:
        return _card_error(request, memory_id, problem(exc))
    if not undone:
        return _card_error(request, memory_id, _("Too late to undo: deleted for good."))
    return _card_response(request, memory_id)


@login_required
@require_POST
def gone(request, memory_id: str | None = None):
    """The undo window is over: the bar goes (an empty swap) and the records with it: a
    card's (its id in the path), a forget's or a health clean's (`ids`)."""
    try:
        asked = request.POST.getlist("ids")
        ids = [memory_id] if memory_id else check.memory_ids("ids", asked, most=UNDO_MOST)
    except MemoryInputError:
        return HttpResponse("")
    DeletedMemory.window_over(request.user, ids)
    return HttpResponse("")


# --- the profile, in place ---------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def profile_inline(request):
    """The profile section: `?edit=1` opens its form; a POST saves it (the edit wins)."""
    profile = profiles.profile_of(request.user)
    form = None
    status = 200
    if request.method == "POST":
        form = ProfileForm(request.POST)
        if form.is_valid():
            profile = profiles.edit(user=request.user, text=form.cleaned_data["text"])
            form = None
            live.toast(user=request.user, text=_("Profile saved."))
        else:
            status = 400
    elif request.GET.get("edit") == "1":
        form = ProfileForm(initial={"text": profile.text})
    context = {"profile": profile, "profile_form": form}
    return render(request, f"{PAGE}#profile", context, status=status)
