"""Chat test helpers: conversations built in code, and a stand-in memory for the turn."""

import pytest

# Models are imported inside the helpers: this module also loads as a plugin before Django.


@pytest.fixture
def conversation(alice):
    from chat.models import Conversation

    return Conversation.objects.create(user=alice, title="Trip planning")


def add_user_message(conversation, content):
    from chat.models import Message

    return Message.objects.create(conversation=conversation, role="user", content=content)


class FakeMemory:
    """A test-local TurnMemory provider with a recording tool executor."""

    def __init__(self, *, system_blocks=(), tools=None, notices=(), behaviour=None):
        self.calls = []
        self.system_blocks = list(system_blocks)
        self.tools = (
            tools
            if tools is not None
            else [
                {
                    "name": "search_memories",
                    "description": "Search the user's memories.",
                    "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
                }
            ]
        )
        self.notices = list(notices)
        self.behaviour = behaviour

    async def execute(self, name, tool_input):
        from memory.chat_integration import ToolOutcome

        self.calls.append((name, tool_input))
        if self.behaviour:
            return await self.behaviour(name, tool_input)
        return ToolOutcome(content='{"results": []}', summary=f"Searched for {tool_input}")

    async def prepare_turn(self, *, user, conversation, user_message):
        from memory.chat_integration import TurnMemory

        return TurnMemory(
            system_blocks=self.system_blocks,
            tools=self.tools,
            execute_tool=self.execute,
            notices=self.notices,
        )


@pytest.fixture
def fake_memory(monkeypatch):
    def install(**kwargs):
        memory = FakeMemory(**kwargs)
        monkeypatch.setattr("memory.chat_integration.prepare_turn", memory.prepare_turn)
        return memory

    return install


@pytest.fixture(autouse=True)
def memory_off(settings):
    """Chat tests run without the real memory server unless a test installs fake_memory."""
    settings.MCP_MEMORY_ENABLED = False
