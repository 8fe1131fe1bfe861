"""A memory server that stops and comes back, seen in a real browser (issue 34): each answer
given meanwhile says, in a small line under it, that it was given without memory; once the
server is back the header says "Memory is back", and only once.

Headless Chromium against Daphne with the memory on (the real ikario_rag over HTTP).
"""

import pytest

from tests.fixtures.browser import screenshot, sign_up, wait_for_memory
from tests.net import stop

pytestmark = pytest.mark.browser

WITHOUT = "Answered without your memories (memory was unavailable)"


def _chat(page, fake_anthropic, text: str, answer: str) -> None:
    fake_anthropic.reply(answer)
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")
    page.locator("article.message.assistant .content.markdown", has_text=answer).wait_for()


def test_answers_without_memory_say_so_and_the_header_says_when_it_is_back(
    page, app_server_with_memory, fake_anthropic
):
    server = app_server_with_memory
    sign_up(page, server, "outage-watcher")
    wait_for_memory(page, server)
    stop(server.memory.process)
    try:
        _chat(page, fake_anthropic, "Which bike should I buy?", "A steel touring bike.")
        _chat(page, fake_anthropic, "And which saddle?", "A leather one.")
        # Both answers, not just the first, say quietly that memory was not there.
        page.locator(".memory-without", has_text=WITHOUT).nth(1).wait_for()
        assert page.locator(".memory-without").count() == 2
        page.reload()
        assert page.locator(".memory-without").count() == 2
        page.locator("#memory-indicator.status-disconnected").wait_for(timeout=60_000)
        screenshot(page, "chat-memory-unavailable")
    finally:
        server.memory.start_again()

    page.locator("#memory-indicator .memory-back", has_text="Memory is back").wait_for(
        timeout=120_000
    )
    screenshot(page, "chat-memory-back")
    # Said once: the next look at the header says nothing more.
    page.reload()
    page.locator("#memory-indicator.status-connected summary").wait_for(timeout=60_000)
    assert page.locator(".memory-back").count() == 0
