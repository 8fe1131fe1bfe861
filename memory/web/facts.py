"""Two sections of /memory: "Add a fact" (kind, category, tags,
expiry) and the retrieval settings as sliders beside the list (max results 1-10, minimum
score). Each is a form that htmx swaps in place, its errors next to its fields; the
sliders save through the JSON API's own settings code (memory/client/user_settings.py), a fact
through the same services.add_thought and checks as POST /api/memory/facts.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from memory.client import services, user_settings
from memory.client.errors import MemoryInputError, MemoryServiceError
from memory.display.fact_forms import AddFactForm, RecallSlidersForm
from memory.learning import kept_out
from memory.models import MemorySettings
from memory.web.page import problem

ADD_FACT = "memory/add_fact.html"
SLIDERS = "memory/recall_sliders.html"
# Where the server's refusal of a context field shows on the form.
FORM_FIELDS = {"content": "content", "context.kind": "kind", "context.category": "category"}
FORM_FIELDS |= {"context.tags": "tags", "context.ttl": "expiry"}


ADDED = {
    "created": gettext_lazy("Fact saved."),
    "updated": gettext_lazy("Fact updated: it replaces an older one."),
    "duplicate": gettext_lazy("Already in memory."),
}


@login_required
@require_POST
def add_fact(request: HttpRequest) -> HttpResponse:
    form = AddFactForm(request.POST)
    if not form.is_valid():
        return render(request, ADD_FACT, {"fact_form": form}, status=400)
    if MemorySettings.turned_off(request.user):
        form.add_error(None, _("Memory is off for your account: turn it on in Controls first."))
        return render(request, ADD_FACT, {"fact_form": form}, status=400)
    try:
        result = services.add_thought(
            user=request.user, content=form.cleaned_data["content"], context=form.context()
        )
    except MemoryInputError as exc:
        form.add_error(FORM_FIELDS.get(exc.field), exc.reason)
        return render(request, ADD_FACT, {"fact_form": form}, status=400)
    except MemoryServiceError as exc:
        form.add_error(None, problem(exc))
        return render(request, ADD_FACT, {"fact_form": form}, status=400)
    if not request.htmx:
        return redirect("memory-page")
    context = {
        "fact_form": AddFactForm(),
        "fact_added": ADDED.get(result.get("status")),
        "fact_kept_out": kept_out.secrets_line(result.get("kept_out")),
    }
    response = render(request, ADD_FACT, context)
    response["HX-Trigger"] = "memory-list-changed"  # the list and the counts show it
    return response


@login_required
@require_POST
def recall_sliders(request: HttpRequest) -> HttpResponse:
    form = RecallSlidersForm(request.POST)
    if not form.is_valid():
        context = {"sliders_form": form, "memory_settings": MemorySettings.for_user(request.user)}
        return render(request, SLIDERS, context, status=400)
    try:
        user_settings.change(request.user, form.cleaned_data)
    except MemoryInputError as exc:
        form.add_error(exc.field if exc.field in form.fields else None, exc.reason)
        context = {"sliders_form": form, "memory_settings": MemorySettings.for_user(request.user)}
        return render(request, SLIDERS, context, status=400)
    if not request.htmx:
        return redirect("memory-page")
    context = {"memory_settings": MemorySettings.for_user(request.user), "sliders_saved": True}
    return render(request, SLIDERS, context)
