"""What Django keeps about a user's notes folder (an Obsidian vault): the settings, and one
row per note seen, so that a sync re-reads only the notes whose mtime or size changed.

The notes themselves stay in the folder, never written to; their tagged sections live in
ikario_rag as memories of kind `note` (memory/notes/sync.py).
"""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

DEFAULT_TAG = "#ikario"


class NotesVault(models.Model):
    """A user's notes folder, its fixed notes and tag, and how the last sync went."""

    MADE = "app"
    GRANTED = "operator"

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notes_vault"
    )
    # The folder this account may read notes from (absolute, resolved): made empty for it
    # by the app, or granted to it by the operator (manage.py notes_grant); never one that
    # merely bears its name (memory/notes/paths.py). "" = none.
    granted_folder = models.CharField(max_length=1000, blank=True, default="")
    granted_by = models.CharField(
        max_length=10,
        blank=True,
        default="",
        choices=[(MADE, _("made for the account")), (GRANTED, _("granted by the operator"))],
    )
    granted_at = models.DateTimeField(null=True, blank=True)
    # The folder read: the granted folder or one inside it. "" = no notes.
    folder = models.CharField(max_length=1000, blank=True, default="")
    # Paths relative to the folder, one a line: given to the model at every turn.
    fixed_notes = models.TextField(blank=True, default="")
    tag = models.CharField(max_length=100, default=DEFAULT_TAG)
    last_sync_at = models.DateTimeField(null=True, blank=True)
    # While a sync runs (one at a time per folder: memory/notes/sync.py claims it).
    sync_started_at = models.DateTimeField(null=True, blank=True)
    # When a sync was last asked for (the turn's "stale" check enqueues at most one).
    sync_requested_at = models.DateTimeField(null=True, blank=True)
    # What the last sync did: {"seen", "read", "added", "changed", "renamed", "deleted",
    # "left", "skipped", "skipped_notes": [[path, reason]], "seconds"}; and why it could
    # not ("" when it could), said once per new reason.
    last_sync = models.JSONField(default=dict, blank=True)
    error = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        db_table = "memory_notes_vaults"
        verbose_name = _("notes folder")
        verbose_name_plural = _("notes folders")

    def __str__(self):
        return f"notes folder of {self.user}"

    @property
    def fixed_paths(self) -> list[str]:
        return [line.strip() for line in self.fixed_notes.splitlines() if line.strip()]


class NoteFile(models.Model):
    """One Markdown note of a vault as last seen: what tells a sync it changed (mtime,
    size), what tells a rename (the same content hash at a new path), and its memories."""

    vault = models.ForeignKey(NotesVault, on_delete=models.CASCADE, related_name="notes")
    path = models.CharField(max_length=1000)  # relative to the folder, "/"-separated
    mtime_ns = models.BigIntegerField()
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    tagged = models.BooleanField(default=False)
    # One memory per heading section (kind `note`), in the note's order.
    memory_ids = models.JSONField(default=list, blank=True)

    class Meta:
        db_table = "memory_note_files"
        constraints = [
            models.UniqueConstraint(fields=["vault", "path"], name="one_row_per_note_path")
        ]
        verbose_name = _("note")
        verbose_name_plural = _("notes")

    def __str__(self):
        return self.path
