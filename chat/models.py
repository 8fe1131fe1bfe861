"""Conversations and their messages: what the chat persists."""

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class Conversation(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations"
    )
    title = models.CharField(max_length=200, default="New chat")
    model = models.CharField(max_length=100, blank=True, default="")
    pinned = models.BooleanField(default=False)
    # Set by memory once the conversation is backed up whole (memory/learning/backup.py),
    # listed and filtered in the admin; added by chat's migration 0002.
    has_memory_backup = models.BooleanField(default=False)
    # An incognito chat (chat/incognito.py): never listed or searched, gone once left;
    # extensions read the flag (memory neither saves nor recalls anything in it).
    incognito = models.BooleanField(default=False)
    # Where a chat came from: "" for one had here, else the assistant whose export it was
    # imported from, with that export's own id for it: importing the same export twice
    # finds it and adds nothing.
    source = models.CharField(
        max_length=20,
        blank=True,
        default="",
        choices=[("", "Ikario"), ("chatgpt", "ChatGPT"), ("claude", "Claude.ai")],
    )
    source_id = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "conversations"
        verbose_name = _("conversation")
        verbose_name_plural = _("conversations")
        ordering = ["-pinned", "-updated_at"]
        indexes = [models.Index(fields=["user", "-pinned", "-updated_at"])]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "source", "source_id"],
                condition=~models.Q(source=""),
                name="one_import_per_source_conversation",
            )
        ]

    def __str__(self):
        return self.title


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"

    class Status(models.TextChoices):
        COMPLETE = "complete"
        STREAMING = "streaming"
        STOPPED = "stopped"
        ERROR = "error"

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(blank=True, default="")
    # Each tool use of the turn: {"id", "name", "input", "result", "is_error", "summary"}.
    tool_calls = models.JSONField(default=list, blank=True)
    # {"input_tokens": n, "output_tokens": n} as reported by the API.
    usage = models.JSONField(default=dict, blank=True)
    model = models.CharField(max_length=100, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.COMPLETE)
    error = models.TextField(blank=True, default="")
    # Who writes a "streaming" answer, and when it last said it was still at it
    # (chat/streaming.py): any process can tell a live answer from an abandoned one.
    stream_token = models.CharField(max_length=32, blank=True, default="")
    stream_host = models.CharField(max_length=255, blank=True, default="")
    stream_pid = models.PositiveIntegerField(null=True, blank=True)
    stream_heartbeat = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "messages"
        verbose_name = _("message")
        verbose_name_plural = _("messages")
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["conversation", "created_at"]),
        ]

    def __str__(self):
        return f"{self.role}: {self.content[:50]}"


class ConversationSettings(models.Model):
    conversation = models.OneToOneField(
        Conversation, on_delete=models.CASCADE, related_name="settings"
    )
    temperature = models.FloatField(null=True, blank=True)
    max_tokens = models.PositiveIntegerField(null=True, blank=True)
    # Added by the memory feature's own migration (0002).
    enable_memory = models.BooleanField(default=True)

    class Meta:
        db_table = "conversation_settings"
        verbose_name = _("conversation settings")
        verbose_name_plural = _("conversation settings")

    def __str__(self):
        return f"settings of conversation {self.conversation_id}"


class UserPreferences(models.Model):
    """Per-user chat preferences: custom instructions appended to the system prompt."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_preferences"
    )
    custom_instructions = models.TextField(blank=True, default="")
    default_model = models.CharField(max_length=100, blank=True, default="")
    # Claude may search and list the user's other chats (chat/past_chats.py).
    reference_past_chats = models.BooleanField(default=True)

    class Meta:
        db_table = "user_preferences"
        verbose_name = _("user preferences")
        verbose_name_plural = _("user preferences")

    def __str__(self):
        return f"preferences of user {self.user_id}"


class ConversationSummary(models.Model):
    """What part of a conversation said, shorter (chat/summaries.py).

    Level 1 sums up one exchange (the user's message(s) and the answer); level n+1 folds
    level-n summaries once they stand for too much text. `first_message`/`last_message`
    bound the messages it stands for; `parent` is the higher-level summary that folded it.
    """

    class Method(models.TextChoices):
        LLM = "llm", "LLM"
        EXTRACTIVE = "extractive"

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="summaries"
    )
    level = models.PositiveSmallIntegerField()
    first_message_id = models.BigIntegerField()
    last_message_id = models.BigIntegerField()
    # Characters of conversation text this summary stands for (messages, for every level).
    source_chars = models.PositiveIntegerField(default=0)
    exchanges = models.PositiveIntegerField(default=1)
    text = models.TextField()
    method = models.CharField(max_length=16, choices=Method.choices)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "conversation_summaries"
        verbose_name = _("conversation summary")
        verbose_name_plural = _("conversation summaries")
        ordering = ["conversation", "first_message_id", "-level"]
        constraints = [
            # One summary per span and level: a job run twice, or a turn and a job at
            # once, cannot store two.
            models.UniqueConstraint(
                fields=["conversation", "level", "last_message_id"],
                name="one_summary_per_span_end",
            )
        ]
        indexes = [models.Index(fields=["conversation", "level", "parent"])]

    def __str__(self):
        return f"level-{self.level} summary of conversation {self.conversation_id}"


class IdempotentRequest(models.Model):
    """A write sent with an `Idempotency-Key` header, and the answer it got (chat/idempotency.py).

    A retry with the same key (same user) gets this answer back and does nothing again.
    `status` is None while the first request runs (its process in `owner`).
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)  # sha256 of method, path and body
    owner = models.CharField(max_length=300, blank=True, default="")  # host:pid of the first
    status = models.PositiveSmallIntegerField(null=True, blank=True)
    content_type = models.CharField(max_length=200, blank=True, default="")
    body = models.BinaryField(blank=True, default=b"")
    streamed = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # The user's message a chat turn saved under this key: a re-run answers that one.
    saved_message = models.ForeignKey(
        "chat.Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        db_table = "idempotent_requests"
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="idempotency_key_per_user")
        ]

    def __str__(self):
        return f"{self.key} of user {self.user_id}"
