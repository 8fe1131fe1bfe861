"""The memory panels in a real browser (headless Chromium against Daphne, the real
ikario_rag subprocess): save a conversation from the button, see the indicator react,
find it again from the sidebar search (debounced), open it in the modal.
"""

import re

import pytest

from tests.fixtures.browser import sign_up, wait_for_memory

pytestmark = pytest.mark.browser

ANSWER = "Chamonix in February is a fine idea: book the Aiguille du Midi early."


def test_it_saves_finds_and_shows_a_conversation(page, app_server_with_memory, fake_anthropic):
    server = app_server_with_memory
    searches = []
    page.on("request", lambda r: "/memory/search" in r.url and searches.append(r.url))
    sign_up(page, server, "panel-skier")
    wait_for_memory(page, server)

    fake_anthropic.reply(ANSWER)
    page.fill("#composer-input", "Help me plan a ski trip to Chamonix")
    page.press("#composer-input", "Enter")
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    page.locator("article.message.assistant .content.markdown").wait_for()
    page.reload()  # the indicator loads with the page

    indicator = page.locator("#memory-indicator.status-connected:not(.figures-pending)")
    indicator.wait_for()
    assert indicator.locator("summary").get_attribute("title") == "Memory active - 0 memories"

    # Save the conversation from the button under the answer.
    page.locator("article.message.assistant summary.memory-save-button").click()
    form = page.locator("article.message.assistant form.memory-save-modal")
    form.locator("select[name=category]").select_option("thematique")
    form.locator("input[name=tags]").fill("ski, travel")
    form.locator("button[type=submit]").click()
    page.locator(
        "article.message.assistant .memory-save-done", has_text="Saved to memory"
    ).wait_for()

    # The indicator heard "memory-saved": it pulses and counts the new memory.
    page.locator("#memory-indicator.pulse").wait_for()
    summary = page.locator("#memory-indicator summary")
    assert summary.get_attribute("title") == "Memory active - 1 memory"
    summary.click()
    assert page.locator("#memory-indicator .memory-connection").inner_text() == "connected"

    # Search from the sidebar: typed quickly, asked once (300 ms debounce).
    searches.clear()
    page.locator(".memory-search input[type=search]").press_sequentially("Chamonix ski", delay=40)
    result = page.locator("#memory-results .memory-result").first
    result.wait_for()
    assert len(searches) == 1, searches
    assert "Help me plan a ski trip to Chamonix" in result.inner_text()
    assert "#ski" in result.inner_text() and "#travel" in result.inner_text()
    assert re.search(r"\d+%", result.locator(".score").inner_text())

    # The category filter asks again; nothing is "fondatrice".
    page.locator(".memory-categories input[value=fondatrice]").check()
    page.locator("#memory-results", has_text="No memories match").wait_for()
    page.locator(".memory-categories input[value='']").check()
    result.wait_for()

    # The result opens in a modal, which closes.
    result.click()
    modal = page.locator("dialog.memory-modal")
    modal.wait_for()
    assert ANSWER in modal.inner_text()
    assert "Thematic" in modal.inner_text()
    modal.locator("button.memory-close").click()
    modal.wait_for(state="hidden")

    # Still saved after a reload: the button says so.
    page.reload()
    assert page.locator("article.message.assistant .memory-save").inner_text().strip() == "Saved"
