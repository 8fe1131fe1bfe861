"""The per-user memory settings page: how memories are recalled (auto-retrieval on/off, how
many to inject and how relevant they must be), with the log of the
latest injections beside it. Memory on/off and pause are the memory page's Controls."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers

from memory.models import MemoryRetrieval, MemorySettings
from memory.web import notes

RECENT_RETRIEVALS = 10


class MemorySettingsForm(forms.ModelForm):
    max_results = forms.IntegerField(
        min_value=1,
        max_value=10,
        label=_("Maximum memories"),
        help_text=_("Memories injected per message (1-10)."),
    )
    min_score = forms.FloatField(
        min_value=0.0,
        max_value=1.0,
        label=_("Minimum score"),
        help_text=_("Minimum relevance (0-1) a memory needs to be injected."),
    )

    class Meta:
        model = MemorySettings
        # Memory on/off and pause are switched in one place: the memory page's Controls.
        fields = ["auto_retrieve", "max_results", "min_score", "review_learning"]
        labels = {
            "auto_retrieve": _("Recall relevant memories automatically before each reply"),
            "review_learning": _("Ask me before keeping what I say"),
        }
        help_texts = {
            "review_learning": _(
                "What Ikario learns from your chats waits on the memory page until you accept it."
            ),
        }


def _recent_retrievals_for_user(user):
    return MemoryRetrieval.objects.filter(user=user).select_related("conversation")[
        :RECENT_RETRIEVALS
    ]


@login_required
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def memory_settings(request: HttpRequest) -> HttpResponse:
    current = MemorySettings.for_user(request.user)
    status = 200
    saved = False
    if request.method == "POST":
        form = MemorySettingsForm(request.POST, instance=current)
        if form.is_valid():
            form.save()
            if not request.htmx:
                return redirect("memory-settings")
            saved = True
            form = MemorySettingsForm(instance=current)
        else:
            status = 400
    else:
        form = MemorySettingsForm(instance=current)
    template = "memory/settings.html#settings_form" if request.htmx else "memory/settings.html"
    context = {
        "form": form,
        "saved": saved,
        "retrievals": _recent_retrievals_for_user(request.user),
        "notes_form": notes.notes_form(request.user),
        "notes_enabled": notes.notes_enabled(request.user),
    }
    return render(request, template, context, status=status)
