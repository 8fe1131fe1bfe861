"""Chat test helpers: conversations built in code; the real memory stays off."""

import pytest

# Models are imported inside the helpers: this module also loads as a plugin before Django.


@pytest.fixture
def conversation(alice):
    from chat.models import Conversation

    return Conversation.objects.create(user=alice, title="Trip planning")


def add_user_message(conversation, content):
    from chat.models import Message

    return Message.objects.create(conversation=conversation, role="user", content=content)


@pytest.fixture(autouse=True)
def memory_off(settings):
    """Chat tests run without the real memory server unless a test installs fake_extension."""
    settings.MCP_MEMORY_ENABLED = False
