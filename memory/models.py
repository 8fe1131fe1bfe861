"""What Django keeps about the memory: per-user settings and the retrieval log.

The memories themselves live in ikario_rag's index, reached only through MCP tools.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class MemorySettings(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_settings"
    )
    # Off: no memory tools and no auto-retrieval in any of this user's conversations.
    memory_enabled = models.BooleanField(default=True)
    auto_retrieve = models.BooleanField(default=True)
    max_results = models.PositiveSmallIntegerField(default=4)  # 1..10
    # 0..1; relevance_score is a probability, 0.5 = more likely relevant than not
    # (contract.RELEVANT).
    min_score = models.FloatField(default=0.5)
    # Paused: memories are kept and still recalled, but nothing new is added (no save
    # tool, no auto-save, no extraction, no save button): memory/client/controls.py.
    paused = models.BooleanField(default=False)
    # "Save conversations to memory": auto-save after each answer.
    autosave = models.BooleanField(default=True)
    # The last reset: auto-save never brings back what was said before it.
    reset_at = models.DateTimeField(null=True, blank=True)
    # "Ask me before keeping what I say": learnt facts wait in the review inbox
    # (memory/learning/review/inbox.py) until the user accepts them.
    review_learning = models.BooleanField(default=False)

    class Meta:
        db_table = "memory_settings"
        # Not "memory settingss" in the admin.
        verbose_name = _("memory settings")
        verbose_name_plural = _("memory settings")

    def __str__(self):
        return f"memory settings of {self.user}"

    @classmethod
    def for_user(cls, user):
        obj, _ = cls.objects.get_or_create(user=user)
        return obj

    @classmethod
    def turned_off(cls, user) -> bool:
        """The user (or user id) turned their memory off. Off means off everywhere: no
        widgets, no API, no tools, no recall, no saving, no profile."""
        return cls.objects.filter(user=user, memory_enabled=False).exists()

    @classmethod
    def is_on_for(cls, user) -> bool:
        """Memory is on for `user`: on for this server, and not turned off by them."""
        return bool(settings.MCP_MEMORY_ENABLED) and not cls.turned_off(user)


class MemoryRetrieval(models.Model):
    """One auto-retrieval injection: what went into the system prompt, and what it cost."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    conversation = models.ForeignKey(
        "chat.Conversation", on_delete=models.CASCADE, related_name="memory_retrievals"
    )
    message = models.ForeignKey("chat.Message", on_delete=models.SET_NULL, null=True, blank=True)
    query = models.TextField()
    # [{"id": str, "score": float}] best first.
    memories = models.JSONField(default=list)
    tokens_added = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0.0)
    # "" when it worked; otherwise why the turn went on without memories.
    error = models.CharField(max_length=300, blank=True, default="")
    # Notes given to the model this turn: fixed notes + recalled memories of kind `note`.
    notes = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memory_retrievals"
        ordering = ["-created_at"]
        verbose_name = _("memory retrieval")
        verbose_name_plural = _("memory retrievals")

    def __str__(self):
        return f"retrieval for {self.query[:50]!r}"


class SavedExchange(models.Model):
    """One exchange of a conversation (the user's message(s) and the answer) in memory.

    What makes saving incremental and idempotent: an exchange is keyed by its answer, so a
    second save of it is refused by the database, and its memories (one per part, for an
    exchange longer than one memory) are listed here. Source key of those memories:
    `conversation:<conversation id>:<answer id>`.
    """

    conversation = models.ForeignKey(
        "chat.Conversation", on_delete=models.CASCADE, related_name="saved_exchanges"
    )
    answer = models.OneToOneField(
        "chat.Message", on_delete=models.CASCADE, related_name="saved_exchange"
    )
    memory_ids = models.JSONField(default=list)
    saved_at = models.DateTimeField(auto_now_add=True)
    # Facts extracted from it (memory/learning/extraction.py): when, and how many were stored.
    extracted_at = models.DateTimeField(null=True, blank=True)
    facts = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "memory_saved_exchanges"
        ordering = ["conversation", "answer"]
        verbose_name = _("saved exchange")
        verbose_name_plural = _("saved exchanges")

    def __str__(self):
        return f"exchange {self.answer_id} of conversation {self.conversation_id}"


class FailedExchange(models.Model):
    """One exchange the memory refused for good (its content can never be stored).

    Recorded once, with the memory's reason, instead of failing the whole save for ever:
    auto-save skips it and goes on with the conversation's other exchanges; the save
    button and the admin show it; saving from the button tries it again.
    """

    conversation = models.ForeignKey(
        "chat.Conversation", on_delete=models.CASCADE, related_name="failed_exchanges"
    )
    answer = models.OneToOneField(
        "chat.Message", on_delete=models.CASCADE, related_name="failed_exchange"
    )
    error = models.CharField(max_length=500)
    failed_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "memory_failed_exchanges"
        ordering = ["-failed_at"]
        verbose_name = _("exchange not saved")
        verbose_name_plural = _("exchanges not saved")

    def __str__(self):
        return f"exchange {self.answer_id} of conversation {self.conversation_id} (not saved)"


class UserProfile(models.Model):
    """What Ikario knows about a user, in a few lines, at the top of every system prompt.

    Rebuilt in the background from the user's facts (`built`); a user's own edit (`edited`)
    wins and is kept: rebuilds go on updating `built`, shown beside it as Ikario's version,
    but never touch `edited` (memory/learning/profile.py).
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_profile"
    )
    built = models.TextField(blank=True, default="")
    built_at = models.DateTimeField(null=True, blank=True)
    # Facts created or changed since the last rebuild.
    changes = models.PositiveIntegerField(default=0)
    edited = models.TextField(blank=True, default="")
    edited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "memory_user_profiles"
        verbose_name = _("user profile")
        verbose_name_plural = _("user profiles")

    def __str__(self):
        return f"profile of {self.user}"

    @property
    def text(self) -> str:
        """What the assistant is told: the user's edit when there is one."""
        return self.edited if self.edited_at else self.built


class DeletedMemory(models.Model):
    """A memory just deleted from the memory page, kept a few seconds for Undo.

    The whole record (with its history) as list_memories returned it, so that undoing
    puts it back as it was, same id (restore_memories). Rows past the undo window are
    removed at the next delete, or when the page says the window is over.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    memory_id = models.CharField(max_length=200)
    record = models.JSONField()
    deleted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memory_deleted"
        indexes = [models.Index(fields=["user", "memory_id"])]

    def __str__(self):
        return f"deleted memory {self.memory_id}"

    @staticmethod
    def _window_opened():
        return timezone.now() - timedelta(seconds=settings.MEMORY_UNDO_SECONDS)

    @classmethod
    def keep(cls, user, records: dict[str, dict]) -> None:
        """Keep these just-deleted records ({id: record}) for Undo; the user's rows past the
        window go."""
        cls.objects.filter(user=user, deleted_at__lt=cls._window_opened()).delete()
        cls.objects.bulk_create(cls(user=user, memory_id=i, record=r) for i, r in records.items())

    @classmethod
    def undoable(cls, user, ids) -> list[DeletedMemory]:
        """The user's records of these ids still within the undo window."""
        opened = cls._window_opened()
        return list(cls.objects.filter(user=user, memory_id__in=ids, deleted_at__gte=opened))

    @classmethod
    def window_over(cls, user, ids) -> None:
        """Deleted for good: the user's records of these ids past the window."""
        opened = cls._window_opened()
        cls.objects.filter(user=user, memory_id__in=ids, deleted_at__lt=opened).delete()


class KeptFromMemory(models.Model):
    """A chat message said while memory was paused, or off for its user or its chat.

    Recorded when it is said (memory/learning/kept_out.py), so that what was said then is never
    saved to memory later: auto-save, the Save button, the admin, `memory_backfill` and
    extraction all leave out the exchange it belongs to (memory/learning/backup.py), whatever the
    switches say by then.
    """

    class Why(models.TextChoices):
        PAUSED = "paused", _("memory paused")
        OFF = "off", _("memory off")
        CHAT_OFF = "chat_off", _("memory off in this chat")

    message = models.OneToOneField(
        "chat.Message",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="kept_from_memory",
    )
    why = models.CharField(max_length=16, choices=Why.choices)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memory_kept_out"
        verbose_name = _("message kept from memory")
        verbose_name_plural = _("messages kept from memory")

    def __str__(self):
        return f"message {self.message_id} kept from memory ({self.why})"


class MemoryJob(models.Model):
    """An import or a reset, run in the background (memory/client/jobs.py), and how far it got:
    the page and the API poll it instead of waiting for work that outlasts a request."""

    class Kind(models.TextChoices):
        IMPORT = "import", _("import")
        RESET = "reset", _("reset")
        # Chats and memories from another assistant's export (memory/history/).
        HISTORY = "history", _("import of past chats")

    class State(models.TextChoices):
        QUEUED = "queued", _("queued")
        RUNNING = "running", _("running")
        DONE = "done", _("done")
        FAILED = "failed", _("failed")

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    done = models.PositiveIntegerField(default=0)  # memories imported (or looked at) so far
    total = models.PositiveIntegerField(default=0)  # in the file; for a reset, unknown (0)
    # The checked records of an import, until it ends; then [] (an export can be megabytes).
    records = models.JSONField(default=list, blank=True)
    outcome = models.JSONField(default=dict, blank=True)  # restored/duplicates/..., deleted
    error = models.TextField(blank=True)  # safe to show
    # The export a history import reads, streamed from disk (never shown: a path).
    file = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "memory_jobs"
        verbose_name = _("memory job")
        verbose_name_plural = _("memory jobs")
        indexes = [models.Index(fields=["user", "state"])]
        # One job under way per user, however many requests ask at once (memory/client/jobs.py).
        constraints = [
            models.UniqueConstraint(
                fields=["user"],
                condition=models.Q(state__in=("queued", "running")),
                name="one_memory_job_under_way",
            )
        ]

    def __str__(self):
        return f"{self.kind} of {self.user} ({self.state})"

    @property
    def finished(self) -> bool:
        return self.state in (self.State.DONE, self.State.FAILED)


class PendingLearning(models.Model):
    """A conversation waiting to be learnt from (memory/learning/conversations.py): one row, so one
    pending task, per conversation however many turns end meanwhile. Each finished turn
    pushes `learn_after` to a short pause after it; the task, if it wakes before then,
    goes back to sleep until then."""

    conversation = models.OneToOneField(
        "chat.Conversation", on_delete=models.CASCADE, related_name="pending_learning"
    )
    learn_after = models.DateTimeField()
    # Its task reached the queue. False after an enqueue that failed (Redis or the database
    # away as the turn ended): the next turn, or the workers' sweep, queues it again.
    queued = models.BooleanField(default=False)

    class Meta:
        db_table = "memory_pending_learning"

    def __str__(self):
        return f"conversation {self.conversation_id} after {self.learn_after:%H:%M:%S}"


class LearntExchange(models.Model):
    """One exchange extraction has read (memory/learning/extraction.py), keyed by its answer: an
    exchange is read once, whether or not its transcript is saved."""

    conversation = models.ForeignKey(
        "chat.Conversation", on_delete=models.CASCADE, related_name="learnt_exchanges"
    )
    answer = models.OneToOneField(
        "chat.Message", on_delete=models.CASCADE, related_name="learnt_exchange"
    )
    facts = models.PositiveIntegerField(default=0)  # facts written
    # "model" (the extraction model) or "rules" (memory/learning/offline_facts.py, no key).
    extractor = models.CharField(max_length=10, default="model")
    learnt_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memory_learnt_exchanges"

    def __str__(self):
        return f"exchange {self.answer_id} of conversation {self.conversation_id} (learnt)"


class NotRelevantRecall(models.Model):
    """A memory the user said was not relevant to a request it was recalled for: auto-recall
    leaves it out for that request and ranks it lower for similar ones
    (memory/recall/not_relevant.py). The request's content terms are what is compared."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    memory_id = models.CharField(max_length=200)
    query = models.TextField()
    terms = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memory_not_relevant"
        indexes = [models.Index(fields=["user", "memory_id"])]

    def __str__(self):
        return f"memory {self.memory_id} not relevant to {self.query[:40]!r}"


class ReviewedFact(models.Model):
    """A fact learning found (memory/learning/review/inbox.py): waiting for the user's word
    (inbox on), kept (learnt without asking: listed on the day it was learnt), accepted by
    the user, or rejected (never proposed again). A waiting fact is not in the memory
    server, so it is never recalled."""

    class State(models.TextChoices):
        WAITING = "waiting", _("waiting")
        KEPT = "kept", _("kept")
        ACCEPTED = "accepted", _("accepted")
        REJECTED = "rejected", _("rejected")

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    state = models.CharField(max_length=10, choices=State.choices)
    content = models.TextField()
    context = models.JSONField(default=dict)  # add_thoughts' context, for keeping it later
    # The user's message it came from (private spans already removed).
    said = models.TextField(blank=True, default="")
    conversation = models.ForeignKey(
        "chat.Conversation", null=True, blank=True, on_delete=models.SET_NULL
    )
    memory_id = models.CharField(max_length=200, blank=True, default="")  # once kept
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memory_reviewed_facts"
        indexes = [models.Index(fields=["user", "state", "created_at"])]

    def __str__(self):
        return f"{self.state} fact {self.content[:40]!r}"


# --- The notes folder (memory/notes/): a user's folder, its settings, and one row per note
# seen, so that a sync re-reads only the notes whose mtime or size changed. The notes stay in
# the folder, never written to; their tagged sections live in ikario_rag as memories of kind
# `note` (memory/notes/sync.py).

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
