"""The memories under an answer in a real browser (headless Chromium against Daphne and the
real ikario_rag), in English on a desktop and in French on a 390 px phone: from "Why did
Claude know this?", Not relevant here (and back), Correct in place, Delete and Undo; the
same list from the conversation's menu. No console error on the way (the fixture's watch)."""

import re

import pytest

from tests.chat.test_ui_browser import DESKTOP, PHONE, browser, shoot  # noqa: F401
from tests.fixtures.browser import sign_up, wait_for_memory

pytestmark = pytest.mark.browser

FACT = "The user is vegan"
WORDS = {
    "en": {
        "not_relevant": "Not relevant here",
        "back": "Relevant after all",
        "correct": "Correct",
        "corrected": "Corrected.",
        "delete": "Delete",
        "deleted": "Memory deleted.",
        "undo": "Undo",
        "menu": "Memories used in this chat",
    },
    "fr": {
        "not_relevant": "Pas pertinent ici",
        "back": "Pertinent, finalement",
        "correct": "Corriger",
        "corrected": "Corrigé.",
        "delete": "Supprimer",
        "deleted": "Souvenir supprimé.",
        "undo": "Annuler",
        "menu": "Souvenirs utilisés dans cette conversation",
    },
}


def _add_fact(page, server, content):
    page.goto(f"{server.url}/memory/")
    page.locator("#memory-add-fact summary").click()
    page.fill("#fact-content", content)
    page.select_option("#fact-kind", "preference")
    page.locator("#memory-add-fact button[type=submit]").click()
    page.locator("#fact-added").wait_for()


@pytest.mark.parametrize(("lang", "viewport"), [("en", DESKTOP), ("fr", PHONE)])
def test_it_acts_on_the_memories_under_an_answer(
    browser,  # noqa: F811
    app_server_with_memory,
    fake_anthropic,
    lang,
    viewport,  # noqa: F811
):
    server = app_server_with_memory
    words = WORDS[lang]
    page = browser.page(viewport, lang)
    sign_up(page, server, f"sources-{lang}")
    wait_for_memory(page, server)
    _add_fact(page, server, FACT)

    page.goto(f"{server.url}/")
    fake_anthropic.reply("Lentils, then.")
    page.fill("#composer-input", "Am I vegan? What do you know about my diet?")
    page.press("#composer-input", "Enter")
    page.locator("article.message.assistant .content.markdown", has_text="Lentils").wait_for()
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    why = page.locator("article.message.assistant").last.locator(".memory-why")
    why.wait_for()
    why.click()
    entry = page.locator("dialog#memory-recall li.memory-recalled", has_text=FACT)
    entry.wait_for()

    # Not relevant here, then back: each is one keyboard-reachable button.
    entry.get_by_role("button", name=words["not_relevant"]).click()
    entry.get_by_role("button", name=words["back"]).wait_for()
    shoot(page, "answer-sources-not-relevant", lang)
    entry.get_by_role("button", name=words["back"]).focus()
    page.keyboard.press("Enter")
    entry.get_by_role("button", name=words["not_relevant"]).wait_for()

    # Correct in place.
    entry.get_by_role("button", name=words["correct"], exact=True).click()
    entry.locator("textarea[name=content]").fill("The user is vegetarian")
    entry.locator("form button[type=submit]").click()
    page.locator("dialog#memory-recall li.memory-recalled", has_text=words["corrected"]).wait_for()
    entry = page.locator("dialog#memory-recall li.memory-recalled", has_text="vegetarian")
    assert "vegetarian" in entry.inner_text()

    # Delete, then Undo.
    entry.get_by_role("button", name=words["delete"]).click()
    gone = page.locator("dialog#memory-recall li.memory-recalled", has_text=words["deleted"])
    gone.wait_for()
    shoot(page, "answer-sources-deleted", lang)
    gone.get_by_role("button", name=words["undo"]).click()
    page.locator("dialog#memory-recall li.memory-recalled", has_text="vegetarian").wait_for()
    page.locator("dialog#memory-recall button.memory-close").click()

    # The whole conversation's memories, from its menu.
    if viewport == PHONE:
        page.locator("[data-drawer-open]").click()
    page.locator(".conv-item.active summary").click()
    page.locator(".conv-item.active .memory-conversation-sources").click()
    listed = page.locator("dialog#memory-conversation-sources")
    listed.wait_for()
    assert words["menu"] in listed.inner_text() and "vegetarian" in listed.inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    shoot(page, "conversation-sources", lang)
