"""Memory health in a real browser (headless Chromium against Daphne and the real
ikario_rag subprocess): a conversation holding a password is saved with a placeholder for
it; a version from before that rule (the password written back into the index) is found by
the health check on /memory among likely secrets, one click cleans it, Undo puts it back;
no console error and no CSP violation on the way."""

import re
import sqlite3
from contextlib import closing

import pytest

from tests.deploy.test_csp_browser import watch
from tests.fixtures.browser import screenshot, sign_up, wait_for_memory

pytestmark = pytest.mark.browser

SAID = "Note for later: the wifi password is tr0ub4dor&3"
ANSWER = "Noted. Keep it somewhere safe too."


def test_it_finds_a_likely_secret_and_cleans_it_with_undo(
    page, app_server_with_memory, fake_anthropic
):
    server = app_server_with_memory
    seen = watch(page)
    sign_up(page, server, "health-checker")
    wait_for_memory(page, server)
    fake_anthropic.reply(ANSWER)
    page.fill("#composer-input", SAID)
    page.press("#composer-input", "Enter")
    page.locator("article.message.assistant .content.markdown", has_text=ANSWER).wait_for()
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    page.locator("article.message.assistant summary.memory-save-button").click()
    page.locator("article.message.assistant form.memory-save-modal button[type=submit]").click()
    page.locator(".toast", has_text="Conversation saved to memory.").wait_for()

    page.goto(f"{server.url}/memory/")
    card = page.locator("#memory-list .memory-card-content", has_text="[a password]")
    card.wait_for()
    assert "tr0ub4dor" not in card.inner_text()
    # As an older version kept it: the password written back into the index file.
    with closing(sqlite3.connect(server.dir / "index" / "memories.sqlite3")) as db, db:
        db.execute("UPDATE memories SET content = replace(content, '[a password]', 'tr0ub4dor&3')")
    page.goto(f"{server.url}/memory/")
    page.locator("#memory-health-check").click()
    group = page.locator("#memory-health-secrets")
    group.wait_for()
    assert "tr0ub4dor&3" in group.inner_text() and "a password" in group.inner_text()
    screenshot(page, "memory-health-secrets")
    # A danger button reads as one: white on red, not white on the page's background.
    style = "e => getComputedStyle(e).backgroundColor"
    assert page.eval_on_selector("#memory-health-clean-secrets", style) == "rgb(185, 28, 28)"

    page.locator("#memory-health-clean-secrets").click()
    page.locator("#memory-health-done", has_text="1 memory cleaned.").wait_for()
    assert page.locator("#memory-health-secrets").count() == 0
    page.locator("#memory-empty").wait_for()  # the list below follows

    page.locator("#memory-health-undo-button").click()
    page.locator("#memory-health-undone", has_text="1 memory put back.").wait_for()
    page.locator("#memory-health-secrets").wait_for()
    page.locator("#memory-list article.memory-card", has_text="tr0ub4dor").wait_for()
    assert [p for p in seen["problems"] if "/favicon.ico)" not in p] == [], seen["problems"]
