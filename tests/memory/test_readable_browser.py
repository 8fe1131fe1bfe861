"""Memory that reads like a person's, in a real browser, in English and in French, on a
desktop and on a phone (issue 23): category badges by a translated name in their
own colours with what each is for, the score gradient in the sidebar and the
detail modal, sources as links to the user's chats, versions said in words, localized
dates, the French strings, the offline responder in French, "+ Nouvelle
conversation" on one line and a phone header that fits its memory indicator.

The app runs with no API key (the offline responder) and the memory on. Each screen
checked is saved to build/screenshots/ (docs/screenshots/ keeps a copy of some).
"""

import json
import re

import pytest
from playwright.sync_api import expect

from tests.deploy.test_csp_browser import watch
from tests.fixtures.browser import AppServer, screenshot, wait_for_memory
from tests.fixtures.users import PASSWORD

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 900}
PHONES = [{"width": 390, "height": 844}, {"width": 360, "height": 740}]
LOCALES = {"en": "en-US", "fr": "fr-FR"}
# Each category's colour (static/memory/memory.css), as the browser computes them.
BADGE_BORDERS = {
    "fondatrice": "rgb(245, 158, 11)",  # #F59E0B
    "thematique": "rgb(59, 130, 246)",  # #3B82F6
    "contextuelle": "rgb(107, 114, 128)",  # #6B7280
}
SCORE_ENDS = {"score-10": "rgb(16, 185, 129)", "score-0": "rgb(239, 68, 68)"}  # #10B981, #EF4444


@pytest.fixture(scope="module")
def offline_server():
    """The app as a fresh install runs it: no API key (the offline responder), memory on."""
    server = AppServer({"ANTHROPIC_API_KEY": "", "MCP_MEMORY_ENABLED": "true"}).start()
    yield server
    server.stop()


def _signed_in(page, server, username, lang="en", viewport=DESKTOP, seen=None):
    """A new browser context in `lang` at `viewport`, signed in as `username` (created once);
    its console errors and CSP violations go to `seen` (a list) when given."""
    context = page.context.browser.new_context(
        viewport=viewport, locale=LOCALES[lang], extra_http_headers={"Accept-Language": lang}
    )
    context.set_default_timeout(30_000)
    tab = context.new_page()
    if seen is not None:
        seen.append(watch(tab))
    tab.goto(f"{server.url}/accounts/login/")
    tab.fill("#id_username", username)
    tab.fill("#id_password", PASSWORD)
    tab.click("button[type=submit]")
    tab.wait_for_url(f"{server.url}/")
    return tab


def _save(tab, server, content, **context):
    csrf = next(c["value"] for c in tab.context.cookies() if c["name"] == "csrftoken")
    response = tab.request.post(
        f"{server.url}/api/memory/add",
        data=json.dumps({"content": content, "context": context}),
        headers={"Content-Type": "application/json", "X-CSRFToken": csrf},
    )
    assert response.status == 201, response.text()
    return response.json()["id"]


def _fits(tab) -> dict:
    return tab.evaluate(
        """() => {
          const bar = document.querySelector('.topbar');
          const indicator = document.querySelector('#memory-indicator').getBoundingClientRect();
          return {page: document.documentElement.scrollWidth, bar: bar.scrollWidth,
                  shown: innerWidth, indicator: indicator.right};
        }"""
    )


def test_the_phone_header_fits_its_memory_indicator(page, offline_server):
    offline_server.create_user("phone-reader", PASSWORD)
    for lang in LOCALES:
        for phone in PHONES:
            tab = _signed_in(page, offline_server, "phone-reader", lang, phone)
            tab.locator("#memory-indicator summary").wait_for()
            tab.locator(".offline-badge").wait_for()
            fits = _fits(tab)
            # It was 398 px wide on a 390 px phone: the indicator cut off at the right edge.
            assert fits["bar"] <= phone["width"], (lang, phone, fits)
            assert fits["page"] <= phone["width"], (lang, phone, fits)
            assert fits["indicator"] <= phone["width"], (lang, phone, fits)
            screenshot(tab, f"readable-phone-header-{lang}-{phone['width']}")
            tab.context.close()


def test_new_chat_stays_on_one_line_in_french(page, offline_server):
    offline_server.create_user("lecteur", PASSWORD)
    for viewport in (DESKTOP, PHONES[1]):
        tab = _signed_in(page, offline_server, "lecteur", "fr", viewport)
        if viewport is not DESKTOP:
            tab.locator(".menu-button").click()
        button = tab.locator("a.new-chat")
        assert button.inner_text() == "+ Nouvelle conversation"
        shown = button.evaluate(
            """(link) => {
              const style = getComputedStyle(link);
              return {height: link.clientHeight - parseFloat(style.paddingTop)
                        - parseFloat(style.paddingBottom),
                      line: parseFloat(style.lineHeight),
                      clipped: link.scrollWidth > link.clientWidth};
            }"""
        )
        assert shown["height"] < 1.5 * shown["line"], shown  # one line, not two
        assert not shown["clipped"], shown  # and all of it shown
        tab.context.close()


def test_the_offline_responder_answers_in_french(page, offline_server):
    offline_server.create_user("francophone", PASSWORD)
    tab = _signed_in(page, offline_server, "francophone", "fr")
    tab.fill("#composer-input", "Bonjour, je prépare un voyage à Lisbonne.")
    tab.press("#composer-input", "Enter")
    answer = tab.locator("article.message.assistant .content.markdown")
    answer.wait_for()
    text = answer.inner_text()
    assert "Répondeur hors ligne" in text and "Vous avez dit" in text, text
    assert "Offline responder" not in text and "You said" not in text, text
    tab.context.close()


def _memories(tab, server, chat_id) -> None:
    _save(
        tab,
        server,
        "I studied law in Coimbra.",
        category="contextuelle",
        concepts=["job"],
        date="2026-11-10T10:00:00+00:00",
    )
    _save(
        tab,
        server,
        "First conversation with Ikario: we talked about what matters to me.",
        category="fondatrice",
        tags=["ikario"],
        date="2026-11-20T10:00:00+00:00",
        source=f"conversation:{chat_id}",
    )
    _save(
        tab,
        server,
        "Long talk about the history of Lisbon trams.",
        category="thematique",
        tags=["lisbon", "trams"],
        date="2026-11-24T10:00:00+00:00",
        source=f"conversation:{chat_id}",
    )
    _save(
        tab,
        server,
        "I work as a lawyer in Lisbon.",
        category="contextuelle",
        tags=["job"],
        concepts=["job"],
        date="2026-11-26T10:00:00+00:00",
        source=f"conversation:{chat_id}",
    )


def test_memory_reads_like_a_persons_in_english_and_french(page, offline_server):
    server = offline_server
    seen = []
    server.create_user("reader", PASSWORD)
    tab = _signed_in(page, server, "reader", "en", seen=seen)
    wait_for_memory(tab, server)
    # A chat of the reader's, which the memories come from.
    tab.fill("#composer-input", "Trip to Lisbon")
    tab.press("#composer-input", "Enter")
    tab.wait_for_url(re.compile(r"/c/\d+/$"))
    chat_id = int(tab.url.rstrip("/").rsplit("/", 1)[1])
    tab.locator("article.message.assistant .content.markdown").wait_for()
    title = tab.locator("#conversation-title").inner_text()
    _memories(tab, server, chat_id)
    tab.context.close()

    words = {
        "en": {
            "labels": {"fondatrice": "Foundational", "contextuelle": "Contextual"},
            "explains": "Everyday exchanges worth keeping for a while.",
            "from": f"From chat “{title}”",
            "date": "26 Nov 2026",
            "changed": "“lawyer” → “nurse”",
            "traced": "Said differently on 26 Nov 2026:",
            "placeholder": "Search my memories…",
        },
        "fr": {
            "labels": {"fondatrice": "Fondatrice", "contextuelle": "Contextuelle"},
            "explains": "Les échanges du quotidien qui valent d’être gardés un temps.",
            "from": f"De la conversation « {title} »",
            "date": "26 nov. 2026",
            "changed": "« lawyer » → « nurse »",
            "traced": "Dit autrement le 26 nov. 2026 :",
            "placeholder": "Rechercher dans mes souvenirs...",
        },
    }
    edited = False
    for lang, said in words.items():
        for device, viewport in (("desktop", DESKTOP), ("phone", PHONES[0])):
            tab = _signed_in(page, server, "reader", lang, viewport, seen)
            tab.goto(f"{server.url}/memory/")
            card = tab.locator("article.memory-card", has_text="lawyer in Lisbon")
            if not edited:
                # One edit makes an earlier version, said in words.
                card.locator(".memory-edit-button").click()
                editor = card.locator("form.memory-edit")
                editor.locator("textarea[name=content]").fill("I work as a nurse in Lisbon.")
                editor.locator("button[type=submit]").click()
                card = tab.locator("article.memory-card", has_text="nurse in Lisbon")
                card.locator(".memory-history").wait_for()
                edited = True
            card = tab.locator("article.memory-card", has_text="nurse in Lisbon")
            badge = card.locator(".badge-contextuelle")
            assert badge.inner_text() == said["labels"]["contextuelle"]
            assert badge.get_attribute("title") == said["explains"]
            # The list may be redrawn live (the edit's own update): expect retries on the new card.
            expect(badge).to_have_css("border-color", BADGE_BORDERS["contextuelle"])
            legend = tab.locator("#memory-category-legend")
            assert said["explains"] in legend.inner_text()
            link = card.locator("a.memory-source-link")
            assert link.inner_text() == said["from"]
            assert link.get_attribute("href") == f"/c/{chat_id}/"
            assert said["date"] in card.locator("time").first.inner_text()
            card.locator(".memory-history summary").click()
            version = card.locator(".memory-version-said").inner_text()
            assert said["changed"] in version, version
            assert tab.locator("#memory-q").get_attribute("placeholder") == said["placeholder"]
            screenshot(tab, f"readable-memory-page-{lang}-{device}")

            # Trace: each version a sentence with its date.
            card.locator(".memory-trace-button").click()
            trace = tab.locator("#memory-trace")
            trace.wait_for()
            trace.locator(".memory-timeline-said", has_text=said["traced"]).wait_for()
            assert "new:" not in trace.inner_text() and "days later" not in trace.inner_text()
            screenshot(tab, f"readable-trace-{lang}-{device}")
            trace.locator("button.memory-close").click()

            # The chat: the sidebar's results and the detail modal, as /memory draws them.
            tab.goto(f"{server.url}/c/{chat_id}/")
            if device == "phone":
                tab.locator(".menu-button").click()
            search = tab.locator(".memory-search input[type=search]")
            assert search.get_attribute("placeholder") == said["placeholder"]
            search.fill("Lisbon trams history")
            result = tab.locator("#memory-results .memory-result", has_text="Lisbon trams")
            result.wait_for()
            badge = result.locator(".badge-thematique")
            expect(badge).to_have_css("border-color", BADGE_BORDERS["thematique"])
            score = result.locator(".score")
            assert re.fullmatch(r"\d+%", score.inner_text())
            colour = score.evaluate("s => getComputedStyle(s).backgroundColor")
            assert colour.startswith("rgb(") and colour != "rgba(0, 0, 0, 0)"
            screenshot(tab, f"readable-chat-memory-panel-{lang}-{device}")
            result.click()
            modal = tab.locator("dialog.memory-modal")
            modal.wait_for()
            assert modal.locator(".badge-thematique").count() == 1
            assert modal.locator(".score").count() == 1
            assert modal.locator("a.memory-source-link").inner_text() == said["from"]
            screenshot(tab, f"readable-memory-modal-{lang}-{device}")
            tab.context.close()

    # The gradient's two ends: red at 0, green at 1.
    tab = _signed_in(page, server, "reader", "en")
    tab.goto(f"{server.url}/memory/")
    for name, colour in SCORE_ENDS.items():
        drawn = tab.evaluate(
            """(name) => { const s = document.createElement('span');
              s.className = 'score ' + name; document.body.append(s);
              return getComputedStyle(s).backgroundColor; }""",
            name,
        )
        assert drawn == colour, (name, drawn)
    tab.context.close()
    problems = [p for watched in seen for p in watched["problems"] if "/favicon.ico)" not in p]
    assert not problems, problems
