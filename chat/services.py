"""Writes for the chat: conversations and user messages (the turn itself is chat/turn.py)."""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext as _

from chat import llm, signals, streaming
from chat.edge import ChatInputError, clean_text, identifier  # the edge's checks
from chat.markdown import plain_text
from chat.models import Conversation, ConversationSettings, Message, UserPreferences

MAX_MESSAGE_CHARS = 100_000
MAX_TITLE_CHARS = 200


def clean_content(content) -> str:
    if not isinstance(content, str):
        raise ChatInputError("content", _("must be a string"))
    if not content.strip():
        raise ChatInputError("content", _("must not be empty"))
    if len(content) > MAX_MESSAGE_CHARS:
        raise ChatInputError("content", _at_most(MAX_MESSAGE_CHARS))
    return clean_text("content", content)


def clean_model(model) -> str:
    if model in (None, ""):
        return ""
    if not isinstance(model, str):
        raise ChatInputError("model", _("must be a string"))
    if model not in llm.available_models():
        raise ChatInputError(
            "model",
            _("unknown model; choose one of %(models)s") % {"models": llm.available_models()},
        )
    return model


def clean_title(title) -> str:
    if not isinstance(title, str):
        raise ChatInputError("title", _("must be a string"))
    title = " ".join(clean_text("title", title).split())
    if not title:
        raise ChatInputError("title", _("must not be empty"))
    if len(title) > MAX_TITLE_CHARS:
        raise ChatInputError("title", _at_most(MAX_TITLE_CHARS))
    return title


def _at_most(limit: int) -> str:
    return _("must be at most %(limit)s characters") % {"limit": limit}


def user_default_model(user) -> str:
    prefs = UserPreferences.objects.filter(user=user).only("default_model").first()
    if prefs and prefs.default_model in llm.available_models():
        return prefs.default_model
    return llm.default_model()


@transaction.atomic
def conversation_create(*, user, title="", model="", incognito=False) -> Conversation:
    conversation = Conversation.objects.create(
        user=user,
        title=clean_title(title) if title else "New chat",
        model=clean_model(model) or user_default_model(user),
        incognito=incognito,
    )
    ConversationSettings.objects.create(conversation=conversation)
    return conversation


def title_from(content: str) -> str:
    """A title from the first message: its text as read, without Markdown's marks."""
    words = plain_text(content) or " ".join(content.split())
    return words if len(words) <= 60 else words[:57].rstrip() + "…"


@transaction.atomic
def message_send(*, conversation: Conversation, content) -> Message:
    """Save the user's message (the first one also names the conversation)."""
    content = clean_content(content)
    # The chat goes on: an earlier answer a dead process left "streaming" is settled first.
    streaming.settle_abandoned_in(conversation.pk)
    message = Message.objects.create(
        conversation=conversation, role=Message.Role.USER, content=content
    )
    fields = ["updated_at"]
    if (
        conversation.title == "New chat"
        and not conversation.messages.exclude(pk=message.pk).exists()
    ):
        conversation.title = title_from(content)
        fields.append("title")
    conversation.save(update_fields=fields)
    return message


class AnsweredSince(Exception):
    """A message sent again whose conversation went on before it was answered: running its
    turn now would answer the later messages instead."""

    def __init__(self, message: Message):
        super().__init__(message.pk)
        self.message = message


def message_again(
    *, conversation: Conversation, content, saved_id: int | None
) -> tuple[Message, Message | None]:
    """For a request sent again after its first attempt died: (the user's message that
    attempt saved, by the id its claim recorded, and its finished answer or None), its
    unfinished answers dropped so the turn runs again; if it saved none, the message saved
    now, as message_send does. AnsweredSince if another message was sent after it and it
    has no finished answer."""
    content = clean_content(content)
    streaming.settle_abandoned_in(conversation.pk)
    said = conversation.messages.filter(role=Message.Role.USER, pk=saved_id).first()
    if saved_id is None or said is None:
        return message_send(conversation=conversation, content=content), None
    answers = conversation.messages.filter(role=Message.Role.ASSISTANT, id__gt=said.pk)
    later = conversation.messages.filter(role=Message.Role.USER, id__gt=said.pk)
    if later.exists():  # its answers are those before the next message of the user
        answers = answers.filter(id__lt=later.order_by("id").first().pk)
    finished = answers.filter(status=Message.Status.COMPLETE).order_by("id").first()
    if finished is None:
        if later.exists():
            raise AnsweredSince(said)
        answers.exclude(status=Message.Status.STREAMING).delete()
    return said, finished


def message_retry(*, conversation: Conversation, message_id) -> Message:
    """Drop a failed or stopped answer so the turn can run again; the user's message stays."""
    message_id = identifier("message_id", message_id)
    try:
        failed = conversation.messages.get(
            pk=message_id,
            role=Message.Role.ASSISTANT,
            status__in=[Message.Status.ERROR, Message.Status.STOPPED],
        )
    except (Message.DoesNotExist, ValueError, TypeError):
        raise ChatInputError("message_id", "no failed answer with this id") from None
    failed.delete()
    pending = conversation.messages.order_by("-created_at", "-id").first()
    if pending is None or pending.role != Message.Role.USER:
        raise ChatInputError("message_id", "nothing to retry: the last message is not yours")
    return pending


def conversation_update(*, conversation: Conversation, title=None, pinned=None, model=None):
    fields = []
    if title is not None:
        conversation.title = clean_title(title)
        fields.append("title")
    newly_pinned = False
    if pinned is not None:
        if not isinstance(pinned, bool):
            raise ChatInputError("pinned", "must be true or false")
        newly_pinned = pinned and not conversation.pinned
        conversation.pinned = pinned
        fields.append("pinned")
    if model is not None:
        cleaned = clean_model(model)
        if not cleaned:
            raise ChatInputError("model", "must not be empty")
        conversation.model = cleaned
        fields.append("model")
    if fields:
        # A rename or pin is not activity: keep the conversation where it is in the list.
        Conversation.objects.filter(pk=conversation.pk).update(
            **{f: getattr(conversation, f) for f in fields}
        )
    if newly_pinned:
        signals.conversation_pinned.send(sender=Conversation, conversation=conversation)
    return conversation


def preferences_for(user) -> UserPreferences:
    prefs, _ = UserPreferences.objects.get_or_create(user=user)
    return prefs
