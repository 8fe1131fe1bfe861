"""/memory/profile/: "What Ikario knows about you", viewable and editable by the user.

An edit is used from the next message on and kept through rebuilds; "Use Ikario's
version" drops it (memory/learning/profile.py).
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from ikario_rag.private import strip as strip_private
from memory.learning import profile as profiles


class ProfileForm(forms.Form):
    text = forms.CharField(
        label=gettext_lazy("What Ikario knows about you"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 10}),
        help_text=gettext_lazy(
            "Who you are, your preferences, your ongoing projects. Your version is "
            "used in every new message and kept when Ikario updates its own."
        ),
    )

    def clean_text(self):
        text = strip_private(self.cleaned_data["text"]).replace("\x00", "")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise forms.ValidationError(_("contains characters that cannot be stored")) from None
        limit = settings.MEMORY_PROFILE_MAX_CHARS
        if len(text) > limit:
            raise forms.ValidationError(
                _("must be at most %(limit)s characters") % {"limit": limit}
            )
        text = "\n".join(line.rstrip() for line in text.strip().splitlines())
        return profiles.from_reader(text)


@login_required
@require_http_methods(["GET", "POST"])
def profile_page(request: HttpRequest) -> HttpResponse:
    profile = profiles.profile_of(request.user)
    status = 200
    if request.method == "POST" and request.POST.get("action") == "use_built":
        profiles.use_built(user=request.user)
        return redirect("memory-profile")
    if request.method == "POST":
        form = ProfileForm(request.POST)
        if form.is_valid():
            profiles.edit(user=request.user, text=form.cleaned_data["text"])
            return redirect("memory-profile")
        status = 400
    else:
        profile = profiles.ensure_built(request.user)
        form = ProfileForm(initial={"text": profiles.for_reader(profile.text)})
    context = {
        "form": form,
        "profile": profile,
        "memory_on": profiles.memory_on_for_user(request.user),
    }
    return render(request, "memory/profile.html", context, status=status)
