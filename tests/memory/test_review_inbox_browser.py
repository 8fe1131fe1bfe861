"""The review inbox in a real browser (headless Chromium against Daphne and the real
ikario_rag), in English on a desktop and in French on a 390 px phone: one switch in the
memory settings, then what learning would keep waits on /memory with the message it came
from; keep, edit and reject, one click each (reject from the keyboard), and what is kept
shows in the memory list. No console error on the way (the fixture's watch)."""

import pytest

from tests.chat.test_ui_browser import DESKTOP, PHONE, browser, shoot  # noqa: F401
from tests.fixtures.browser import sign_up, wait_for_memory

pytestmark = pytest.mark.browser

WORDS = {
    "en": {
        "switch": "Ask me before keeping what I say",
        "waiting": "Waiting for your word: 3 facts",
        "keep": "Keep",
        "edit": "Edit",
        "reject": "Reject",
        "none": "Nothing waits for your word.",
    },
    "fr": {
        "switch": "Me demander avant de garder ce que je dis",
        "waiting": "En attente de votre avis : 3 faits",
        "keep": "Garder",
        "edit": "Modifier",
        "reject": "Rejeter",
        "none": "Rien n’attend votre avis.",
    },
}
FACTS = [
    ("The user plays the cello", "I play the cello on Sundays."),
    ("The user lives in Nantes", "Since I moved to Nantes, it rains."),
    ("The user hates <b>metronomes</b>", "Metronomes, ugh."),
]


def _learnt_waiting(server, username):
    """What learning would have kept, waiting (the learning itself: test_review_inbox.py)."""
    rows = ", ".join(
        f"ReviewedFact(user=user, state='waiting', content={c!r}, said={s!r})" for c, s in FACTS
    )
    server.manage(
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model; "
        "from memory.models import ReviewedFact; "
        f"user = get_user_model().objects.get(username={username!r}); "
        f"ReviewedFact.objects.bulk_create([{rows}])",
    )


@pytest.mark.parametrize(("lang", "viewport"), [("en", DESKTOP), ("fr", PHONE)])
def test_it_keeps_edits_and_rejects_what_learning_would_keep(
    browser,  # noqa: F811
    app_server_with_memory,
    lang,
    viewport,
):
    server = app_server_with_memory
    words = WORDS[lang]
    page = browser.page(viewport, lang)
    username = f"inbox-{lang}"
    sign_up(page, server, username)
    wait_for_memory(page, server)

    page.goto(f"{server.url}/memory/settings/")
    page.get_by_label(words["switch"]).check()
    page.locator("#memory-settings-form button[type=submit]").click()
    page.locator("#memory-settings-form .saved").wait_for()
    _learnt_waiting(server, username)

    page.goto(f"{server.url}/memory/")
    inbox = page.locator("#memory-inbox")
    inbox.locator("h2", has_text=words["waiting"]).wait_for()
    assert "Metronomes, ugh." in inbox.inner_text()
    assert inbox.locator("b").count() == 0  # escaped
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    inbox.scroll_into_view_if_needed()
    shoot(page, "review-inbox", lang)

    cello = inbox.locator("li", has_text="cello")
    cello.get_by_role("button", name=words["keep"]).click()
    page.locator("#memory-list article.memory-card", has_text="The user plays the cello").wait_for()

    nantes = page.locator("#memory-inbox li", has_text="Nantes")
    nantes.get_by_role("button", name=words["edit"]).click()
    page.locator("#memory-inbox input[name=content]").fill("The user lives in Rezé, near Nantes")
    page.locator("#memory-inbox form button[type=submit]").click()
    page.locator("#memory-list article.memory-card", has_text="Rezé").wait_for()

    reject = page.locator("#memory-inbox li", has_text="metronomes").get_by_role(
        "button", name=words["reject"]
    )
    reject.focus()
    page.keyboard.press("Enter")
    page.locator("#memory-inbox-empty", has_text=words["none"]).wait_for()
    assert page.locator("#memory-list article.memory-card", has_text="metronomes").count() == 0
    page.locator("#memory-inbox").scroll_into_view_if_needed()
    shoot(page, "review-inbox-done", lang)


LEARNT = {
    "en": {"today": "Learnt today: 2 facts", "right": "Right", "wrong": "Wrong: forget it"},
    "fr": {
        "today": "Appris aujourd’hui : 2 faits",
        "right": "C’est juste",
        "wrong": "Faux : l’oublier",
    },
}


@pytest.mark.parametrize(("lang", "viewport"), [("en", DESKTOP), ("fr", PHONE)])
def test_switched_off_it_lists_what_was_learnt_today(
    browser,  # noqa: F811
    app_server_with_memory,
    lang,
    viewport,
):
    server = app_server_with_memory
    words = LEARNT[lang]
    page = browser.page(viewport, lang)
    username = f"learnt-{lang}"
    sign_up(page, server, username)
    wait_for_memory(page, server)
    # Learning's own call, switch off: written to the memory and listed.
    server.manage(
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model; "
        "from memory.learning.review import inbox; "
        f"user = get_user_model().objects.get(username={username!r}); "
        "inbox.keep(user=user, conversation=None, said='Cello on Sundays, no metronome.', "
        "items=[{'content': 'The user plays the cello'}, "
        "{'content': 'The user hates metronomes'}])",
    )

    page.goto(f"{server.url}/memory/")
    inbox = page.locator("#memory-inbox")
    inbox.locator("h2", has_text=words["today"]).wait_for()
    page.locator("#memory-list article.memory-card", has_text="metronomes").wait_for()
    inbox.scroll_into_view_if_needed()
    shoot(page, "learnt-today", lang)

    cello = page.locator("#memory-inbox li", has_text="The user plays the cello")
    cello.get_by_role("button", name=words["right"]).click()
    cello.wait_for(state="detached")
    metronomes = page.locator("#memory-inbox li", has_text="The user hates metronomes")
    metronomes.get_by_role("button", name=words["wrong"]).click()
    metronomes.wait_for(state="detached")
    page.locator("#memory-list article.memory-card", has_text="metronomes").wait_for(
        state="detached"
    )
    assert page.locator("#memory-list article.memory-card", has_text="cello").count() == 1
