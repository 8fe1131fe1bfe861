"""The review inbox on /memory (memory/learning/review/inbox.py): what learning would keep,
waiting for the user's word with the message it came from (with "Ask me before keeping what
I say" on), or what it learnt today (off). Accept, edit or reject, one click each; every
action answers with the whole section, swapped in place."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import pgettext_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import trigger_client_event

from ikario_rag import contract
from memory.client.errors import MemoryServiceError
from memory.learning.review import inbox
from memory.models import MemorySettings, ReviewedFact
from memory.web.page import problem

SECTION = "memory/inbox.html"


class FactForm(forms.Form):
    content = forms.CharField(
        label=pgettext_lazy("one memory", "Memory"), max_length=contract.MAX_CONTENT
    )


def _fact_for_user(user, fact_id: int) -> ReviewedFact:
    fact = inbox.to_review(user).filter(pk=fact_id).first()
    if fact is None:
        raise Http404("Nothing to review here")
    return fact


def _section(request, *, status=200, changed=False, **shown) -> HttpResponse:
    asking = MemorySettings.objects.filter(user=request.user, review_learning=True).exists()
    context = {"asking": asking, "facts": list(inbox.to_review(request.user)), **shown}
    response = render(request, SECTION, context, status=status)
    if changed:
        trigger_client_event(response, "memory-list-changed")  # the list and counts show it
    return response


@login_required
@require_GET
def section(request):
    return _section(request)


@login_required
@require_POST
def accept(request, fact_id: int):
    fact = _fact_for_user(request.user, fact_id)
    written = fact.state == ReviewedFact.State.WAITING  # a kept one is only confirmed
    try:
        inbox.accept(fact)
    except MemoryServiceError as exc:
        return _section(request, error=problem(exc))
    return _section(request, changed=written, done=_("Kept: “%(fact)s”") % {"fact": fact.content})


@login_required
@require_http_methods(["GET", "POST"])
def edit(request, fact_id: int):
    """GET: the fact's form in place; POST: kept in the user's wording."""
    fact = _fact_for_user(request.user, fact_id)
    if request.method == "GET":
        return _section(request, editing=fact.pk, form=FactForm(initial={"content": fact.content}))
    form = FactForm(request.POST)
    if not form.is_valid():
        return _section(request, editing=fact.pk, form=form, status=400)
    try:
        inbox.accept(fact, content=form.cleaned_data["content"])
    except MemoryServiceError as exc:
        return _section(request, editing=fact.pk, form=form, error=problem(exc))
    return _section(request, changed=True, done=_("Kept: “%(fact)s”") % {"fact": fact.content})


@login_required
@require_POST
def reject(request, fact_id: int):
    fact = _fact_for_user(request.user, fact_id)
    try:
        inbox.reject(fact)
    except MemoryServiceError as exc:
        return _section(request, error=problem(exc))
    done = _("Rejected, and never proposed again: “%(fact)s”") % {"fact": fact.content}
    return _section(request, changed=True, done=done)
