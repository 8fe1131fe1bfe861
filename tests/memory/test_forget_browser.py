"""Forget a topic in a real browser (issue 23): a preview is for the topic it was asked for;
a new topic discards it, and a confirmation deletes what its own preview showed, with Undo.

Headless Chromium against Daphne with the memory on (the real ikario_rag subprocess).
"""

import json

import pytest

from tests.deploy.test_csp_browser import watch
from tests.fixtures.browser import screenshot, sign_up, wait_for_memory

pytestmark = pytest.mark.browser

CATS = "Alice has two cats, Miso and Tofu"
TOYOTA = "Alice drives an old Toyota Corolla"


def _save_memory(page, server, content):
    csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    response = page.request.post(
        f"{server.url}/api/memory/add",
        data=json.dumps({"content": content}),
        headers={"Content-Type": "application/json", "X-CSRFToken": csrf},
    )
    assert response.status == 201, response.text()


def _cards(page) -> list[str]:
    return sorted(page.locator("#memory-list .memory-card-content").all_inner_texts())


def test_a_new_topic_discards_the_preview_and_a_forget_can_be_undone(page, app_server_with_memory):
    server = app_server_with_memory
    seen = watch(page)
    sign_up(page, server, "forget-cats")
    wait_for_memory(page, server)
    _save_memory(page, server, CATS)
    _save_memory(page, server, TOYOTA)
    page.goto(f"{server.url}/memory/")
    page.locator("#memory-list .memory-card", has_text="Toyota").wait_for()

    # "cats", Enter: the cats memory is what would go.
    page.locator("#memory-forget summary").click()
    page.fill("#forget-topic", "cats")
    page.press("#forget-topic", "Enter")
    page.locator(".forget-preview li", has_text="Miso and Tofu").wait_for()

    # The text replaced by "Toyota": the cats preview goes at once; Enter shows Toyota's.
    page.fill("#forget-topic", "Toyota")
    page.locator("#forget-preview").wait_for(state="hidden")
    page.press("#forget-topic", "Enter")
    page.locator(".forget-preview li", has_text="Toyota Corolla").wait_for()
    assert page.locator(".forget-preview li", has_text="Miso").count() == 0
    assert page.locator("#forget-done").count() == 0
    assert _cards(page) == sorted([CATS, TOYOTA])  # nothing deleted
    screenshot(page, "memory-page-forget-new-topic")

    # Confirmed: Toyota goes, the cats stay; Undo puts Toyota back.
    page.locator("#forget-confirm").click()
    page.locator("#forget-done", has_text="1 memory about “Toyota” forgotten.").wait_for()
    page.locator("#memory-list .memory-card", has_text="Toyota").wait_for(state="detached")
    assert _cards(page) == [CATS]
    screenshot(page, "memory-page-forget-undo")
    page.locator("#forget-undo-button").click()
    page.locator("#forget-undone", has_text="1 memory put back.").wait_for()
    page.locator("#memory-list .memory-card", has_text="Toyota").wait_for()
    assert _cards(page) == sorted([CATS, TOYOTA])
    assert seen["problems"] == [] or all("/favicon.ico)" in p for p in seen["problems"])
