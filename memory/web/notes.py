"""The notes folder's settings (on the memory settings page), its "Notes" section on
/memory, and "Sync now". Saving the settings enqueues a sync (memory/notes/sync.py).

An account without a folder may have one made, empty, for it ("Make my notes folder"):
a folder is the account's when made for it or granted to it (memory/notes/paths.py)."""

from __future__ import annotations

import re

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from memory.models import DEFAULT_TAG, MemoryRetrieval, NotesVault
from memory.notes import paths, sync
from memory.notes.paths import PathRefused, check_folder, make_folder, notes_root, resolve_note

MAX_FIXED_NOTES = 10
_TAG = re.compile(r"^#?[\w][\w/-]{0,98}$")


class NotesForm(forms.ModelForm):
    folder = forms.CharField(
        required=False,
        max_length=1000,
        label=gettext_lazy("Notes folder"),
        help_text=gettext_lazy(
            "Your notes folder (an Obsidian vault of Markdown notes), or a folder inside "
            "it: “.” for all of it. Empty: no notes."
        ),
    )
    fixed_notes = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label=gettext_lazy("Fixed notes"),
        help_text=gettext_lazy(
            "Notes always given to Ikario as context: one path a line, relative to the "
            "folder (e.g. About me.md)."
        ),
    )
    tag = forms.CharField(
        max_length=100,
        label=gettext_lazy("Tag"),
        help_text=gettext_lazy(
            "Notes carrying this tag (in their text or front matter) become memories, "
            "one per heading section."
        ),
    )

    class Meta:
        model = NotesVault
        fields = ["folder", "fixed_notes", "tag"]

    def clean_folder(self):
        value = self.cleaned_data["folder"].strip()
        if not value:
            return ""
        try:
            return check_folder(self.instance, value)
        except PathRefused as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_tag(self):
        value = self.cleaned_data["tag"].strip()
        if not _TAG.match(value):
            raise forms.ValidationError(_("One tag, such as #ikario (letters, digits, - _ /)."))
        return "#" + value.lstrip("#")

    def clean(self):
        cleaned = super().clean()
        folder = cleaned.get("folder")
        lines = [
            line.strip() for line in (cleaned.get("fixed_notes") or "").splitlines() if line.strip()
        ]
        if len(lines) > MAX_FIXED_NOTES:
            self.add_error("fixed_notes", _("At most %(n)d fixed notes.") % {"n": MAX_FIXED_NOTES})
            return cleaned
        if lines and not folder:
            if "folder" not in self.errors:
                self.add_error("fixed_notes", _("Choose the notes folder first."))
            return cleaned
        for line in lines:
            try:
                resolve_note(folder, line)
            except PathRefused as exc:
                self.add_error("fixed_notes", str(exc))
                return cleaned
        cleaned["fixed_notes"] = "\n".join(lines)
        return cleaned


def vault_of(user) -> NotesVault:
    """The user's notes settings; unsaved until they save the form (a GET writes nothing)."""
    return NotesVault.objects.filter(user=user).first() or NotesVault(user=user, tag=DEFAULT_TAG)


def notes_form(user, data=None) -> NotesForm:
    return NotesForm(data, instance=vault_of(user))


def notes_enabled(user) -> bool:
    """The account has a notes folder, or may have one made."""
    return notes_root() is not None or bool(vault_of(user).granted_folder)


def _settings(request: HttpRequest, form=None, *, status=200, **said) -> HttpResponse:
    context = {
        "notes_form": form or notes_form(request.user),
        "notes_enabled": notes_enabled(request.user),
        **said,
    }
    return render(request, "memory/notes_settings.html", context, status=status)


@login_required
@require_POST
def notes_settings(request: HttpRequest) -> HttpResponse:
    form = notes_form(request.user, request.POST)
    if not form.is_valid():
        return _settings(request, form, status=400)
    form.save()
    sync.request_sync(request.user.pk)
    if not request.htmx:
        return redirect("memory-settings")
    return _settings(request, notes_saved=True)


@login_required
@require_POST
def make_notes_folder(request: HttpRequest) -> HttpResponse:
    """A new, empty notes folder for this account (none made if it has one)."""
    vault = vault_of(request.user)
    if not vault.granted_folder:
        try:
            made = make_folder(request.user)
        except PathRefused as exc:
            return _settings(request, status=400, notes_folder_error=str(exc))
        vault.granted_folder, vault.folder = made, made
        vault.granted_by, vault.granted_at = NotesVault.MADE, timezone.now()
        vault.save()
    if not request.htmx:
        return redirect("memory-settings")
    return _settings(request, notes_folder_made=True)


# Why the last sync left a note out, in the user's words (memory/notes/paths.py's reasons).
LEFT_OUT = {
    paths.NOT_A_FILE: gettext_lazy("not a regular file (a pipe, a device or a socket)"),
    paths.SYMLINK: gettext_lazy("a symbolic link: links are not followed"),
    paths.LINKED: gettext_lazy("a file with other hard links: not read"),
    paths.TOO_LARGE: gettext_lazy("larger than the largest note read"),
    paths.SLOW: gettext_lazy("not read in time"),
    paths.UNREADABLE: gettext_lazy("could not be read"),
    sync.FRONT_MATTER: gettext_lazy(
        "its front matter was not read (YAML anchors or aliases, too long or too deep)"
    ),
}


def section_context(user) -> dict:
    """What the Notes section of /memory shows."""
    vault = NotesVault.objects.filter(user=user).first()
    latest = MemoryRetrieval.objects.filter(user=user).values_list("notes", flat=True).first()
    done = (vault.last_sync if vault else None) or {}
    left_out = [
        (path, LEFT_OUT.get(reason, LEFT_OUT[paths.UNREADABLE]))
        for path, reason in done.get("skipped_notes") or []
    ]
    return {
        "notes_vault": vault,
        "notes_enabled": notes_enabled(user),
        "notes_last_reply": latest,  # notes given to the latest recall (the log), or None
        "notes_left_out": left_out,  # [(path, why)] of the last sync, the first few
    }


@login_required
@require_POST
def sync_now(request: HttpRequest) -> HttpResponse:
    if NotesVault.objects.filter(user=request.user).exclude(folder="").exists():
        sync.request_sync(request.user.pk)
    if not request.htmx:
        return redirect("memory-page")
    context = {**section_context(request.user), "notes_sync_asked": True}
    return render(request, "memory/notes_section.html", context)


@login_required
def section(request: HttpRequest) -> HttpResponse:
    return render(request, "memory/notes_section.html", section_context(request.user))
