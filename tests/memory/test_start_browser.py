"""A memory server still starting, in a real browser against Daphne (its memory server
listening but not yet serving when the first page opens): the first page shows
"starting…", the first turn waits for the connection and has the user's memories, and the
indicator turns live without a reload.

The memory server is the real ikario_rag behind a gate (tests/memory/gated_server.py), so
that "starting" lasts until the test has seen it.
"""

import re

import pytest

from tests.fixtures.browser import AppServer
from tests.fixtures.users import PASSWORD
from tests.memory.test_start import START_WAIT, Gated, seed

pytestmark = pytest.mark.browser

REMEMBERED = "Nora keeps three beehives on the roof of her building in Lyon"


def test_it_shows_memory_starting_and_remembers_from_the_first_turn(
    page, fake_anthropic_server, fake_anthropic, tmp_path
):
    gated = Gated(tmp_path)
    server = AppServer(
        {
            "ANTHROPIC_BASE_URL": fake_anthropic_server.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-browser-tests",
            "ANTHROPIC_MAX_RETRIES": "0",
            "MCP_MEMORY_ENABLED": "true",
            "MCP_IKARIO_SERVER_URL": "",  # the gated server's, once it listens
            "IKARIO_TOKEN": gated.token,
            # The budget a turn may spend waiting for a connection in progress, then searching.
            "MEMORY_RETRIEVAL_TIMEOUT": str(START_WAIT),
        }
    )
    try:
        server.manage("migrate", "--noinput")
        server.create_user("nora", PASSWORD)
        pk = server.manage(
            "shell",
            "-c",
            "from django.contrib.auth.models import User; "
            "print(User.objects.get(username='nora').pk)",
        ).split()[-1]  # after the shell's own "N objects imported automatically"
        seed(gated.index_dir, f"user-{pk}", REMEMBERED)
        server.env["MCP_IKARIO_SERVER_URL"] = gated.start()
        server.start()

        page.goto(f"{server.url}/accounts/login/")
        page.fill("#id_username", "nora")
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{server.url}/")
        starting = page.locator("#memory-indicator.status-starting")
        starting.wait_for()
        assert starting.locator("summary").get_attribute("title") == "Memory starting…"

        fake_anthropic.reply("Your bees, I hope, are well.")
        page.fill("#composer-input", "How are my beehives doing?")
        page.press("#composer-input", "Enter")
        gated.open()  # only now can the memory server start for real

        # Live without a reload: the indicator asked again every second.
        page.locator("#memory-indicator.status-connected").wait_for(timeout=START_WAIT * 1000)
        page.wait_for_url(re.compile(r"/c/\d+/$"))
        page.locator("article.message.assistant .content.markdown").wait_for(
            timeout=START_WAIT * 1000
        )
        system = fake_anthropic.requests[0]["system"]
        said = system if isinstance(system, str) else "".join(b["text"] for b in system)
        assert REMEMBERED in said
        assert page.locator(".notice", has_text="unavailable").count() == 0
    finally:
        gated.stop()
        server.stop()
