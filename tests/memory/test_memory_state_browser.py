"""The memory's state in a real browser (issue 23): the header says "paused" while memory is
paused and "off in this chat" once the chat's menu turns it off, at once; that chat offers
no Save; memory is switched on and off in one place, the memory page's Controls.

Headless Chromium against Daphne with the memory on (the real ikario_rag subprocess).
"""

import re

import pytest

from tests.deploy.test_csp_browser import watch
from tests.fixtures.browser import screenshot, sign_up, wait_for_memory
from tests.wait import wait_until

pytestmark = pytest.mark.browser


def _chat(page, fake_anthropic, text: str, answer: str) -> None:
    fake_anthropic.reply(answer)
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")
    page.locator("article.message.assistant .content.markdown", has_text=answer).wait_for()


def _indicator(page) -> str:
    # The one with the server's figures: the quick one before it is replaced at once.
    summary = page.locator("#memory-indicator.status-connected:not(.figures-pending) summary")
    summary.wait_for()
    return summary.get_attribute("title")


def test_the_header_the_chat_and_its_menu_say_the_memory_state(
    page, app_server_with_memory, fake_anthropic
):
    server = app_server_with_memory
    seen = watch(page)
    sign_up(page, server, "state-teller")
    wait_for_memory(page, server)
    _chat(page, fake_anthropic, "Which trumpet should a beginner buy?", "A Yamaha YTR.")
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    chat_url = page.url
    assert _indicator(page).startswith("Memory active")

    # One place: the settings page points to the memory page's Controls, which pause.
    page.goto(f"{server.url}/memory/settings/")
    assert page.locator("#id_memory_enabled").count() == 0
    page.locator("#memory-controls-link a").click()
    page.wait_for_url(f"{server.url}/memory/#memory-controls")
    page.locator("#control-enabled[aria-checked=true]").wait_for()
    page.locator("#control-paused").click()
    page.locator("#control-paused[aria-checked=true]").wait_for()
    page.locator("#memory-indicator.memory-paused").wait_for()  # the header, at once

    # The chat says paused: in the header, on its Save, in its menu.
    page.goto(chat_url)
    assert _indicator(page).startswith("Memory paused")
    page.locator("#memory-indicator summary").click()
    page.locator("#memory-paused-note", has_text="nothing new is saved").wait_for()
    page.locator("#memory-indicator summary").click()
    page.locator("article.message.assistant .memory-save-paused").wait_for()
    page.locator(".conv-item.active summary").click()
    menu = page.locator(".conv-item.active .memory-conversation-switch")
    assert "Paused for every chat" in menu.inner_text()
    screenshot(page, "chat-memory-paused")

    # Resumed, then this chat's memory off from its menu: the header says so at once,
    # and the chat offers no Save.
    page.goto(f"{server.url}/memory/")
    page.locator("#control-paused").click()
    page.locator("#control-paused[aria-checked=false]").wait_for()
    page.goto(chat_url)
    assert _indicator(page).startswith("Memory active")
    page.locator(".conv-item.active summary").click()
    menu.locator("button").click()
    menu.locator("button[aria-checked=false]").wait_for()
    page.locator("#memory-indicator.memory-chat-off").wait_for()
    assert _indicator(page) == "Memory off in this chat"
    page.reload()
    assert _indicator(page) == "Memory off in this chat"
    page.locator("article.message.assistant .memory-save-chat-off").wait_for()
    assert page.locator("article.message.assistant .memory-save-button").count() == 0
    screenshot(page, "chat-memory-off-here")
    assert seen["problems"] == [] or all("/favicon.ico)" in p for p in seen["problems"])


def test_the_memory_status_the_user_opened_stays_open_when_it_refreshes(
    page, app_server_with_memory
):
    # The indicator replaces itself (at once, then with the server's figures, then every
    # 30 s): a click that opened it just before would otherwise find it closed again.
    server = app_server_with_memory
    sign_up(page, server, "status-reader")
    wait_for_memory(page, server)
    _indicator(page)
    page.locator("#memory-indicator summary").click()
    page.locator("#memory-indicator details[open]").wait_for()
    first = page.locator("#memory-indicator").element_handle()
    page.evaluate("htmx.trigger(document.body, 'memory-state-changed')")
    # Polled from here: Playwright's wait_for_function evaluates a string, which the CSP refuses.
    wait_until(lambda: not first.evaluate("el => el.isConnected"), "the indicator replaced", 30)
    page.locator("#memory-indicator:not(.figures-pending) details[open]").wait_for()
    page.locator("#memory-indicator .memory-dashboard-link a").click()
    page.wait_for_url(f"{server.url}/memory/")
