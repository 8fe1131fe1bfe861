"""Chat test helpers: conversations built in code; the real memory stays off."""

import pytest

# Models are imported inside the helpers: this module also loads as a plugin before Django.


@pytest.fixture
def conversation(alice):
    from tests.fixtures.builders import make_conversation

    return make_conversation(alice, "Trip planning")


@pytest.fixture(autouse=True)
def memory_off(settings):
    """Chat tests run without the real memory server unless a test installs fake_extension."""
    settings.MCP_MEMORY_ENABLED = False
