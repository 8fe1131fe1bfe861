"""The app as a new user meets it, in headless Chromium: on a desktop and a 390 px phone,
in English and in French, keyboard included; issue 13's rough edges, each fixed.

Every page of these tests collects the browser console: an error there fails the test.
Each screen is saved to build/screenshots/<screen>-<lang>-<width>.png (docs/RUNNING.md says so).
"""

from __future__ import annotations

import os
import re
import time

import pytest

from tests.fixtures.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    AppServer,
    screenshot,
    sign_up,
    wait_for_memory,
)

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
LOCALES = {"en": "en-US", "fr": "fr-FR"}


class Browser:
    """Pages at a size and in a language, each with its console watched."""

    def __init__(self, playwright):
        self.browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
        self.contexts = []
        self.errors: list[str] = []

    def page(self, viewport=DESKTOP, lang="en"):
        context = self.browser.new_context(viewport=viewport, locale=LOCALES[lang])
        context.set_default_timeout(30_000)  # a bound on waiting, wide for loaded machines
        self.contexts.append(context)
        page = context.new_page()
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        return page

    def close(self):
        for context in self.contexts:
            context.close()
        self.browser.close()


@pytest.fixture
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail("/usr/bin/chromium is missing: run `make chromium`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        watched = Browser(playwright)
        yield watched
        watched.close()
        assert watched.errors == [], "console errors"


def wait_until(page, script: str, timeout: float = 15.0):
    """Poll a JS expression from here: Playwright's wait_for_function polls with eval,
    which the app's CSP refuses (and the console watch would report)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(script):
        if time.monotonic() > deadline:
            pytest.fail(f"never true: {script}")
        page.wait_for_timeout(50)


def shoot(page, screen: str, lang: str):
    screenshot(page, f"{screen}-{lang}-{page.viewport_size['width']}")


def first_chat(page, server, fake_anthropic, username, text="Where should I ski in March?"):
    sign_up(page, server, username)
    fake_anthropic.reply("Try **Tignes**: the snow holds late.")
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    page.locator("article.message.assistant .content.markdown").wait_for()


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_it_opens_the_sidebar_as_a_drawer_on_a_phone(browser, app_server, fake_anthropic, lang):
    from playwright.sync_api import expect

    page = browser.page(PHONE, lang)
    first_chat(page, app_server, fake_anthropic, f"phone-{lang}")
    shoot(page, "chat", lang)
    sidebar = page.locator("#sidebar")
    menu = page.locator("[data-drawer-open]")
    expect(sidebar).not_to_be_visible()
    # The title keeps room for words, and nothing sticks out sideways.
    assert page.locator(".topbar .title").bounding_box()["width"] > 80
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    label = {"en": "Open the menu", "fr": "Ouvrir le menu"}[lang]
    assert menu.get_attribute("aria-label") == label

    # By keyboard: the button opens the drawer, focus moves in, Escape closes it.
    menu.focus()
    page.keyboard.press("Enter")
    expect(sidebar).to_be_visible()
    expect(menu).to_have_attribute("aria-expanded", "true")
    assert page.evaluate("document.getElementById('sidebar').contains(document.activeElement)")
    page.wait_for_timeout(300)  # the slide-in, for the picture
    shoot(page, "drawer", lang)
    page.keyboard.press("Escape")
    expect(sidebar).not_to_be_visible()
    assert page.evaluate("document.activeElement.hasAttribute('data-drawer-open')")

    # A tap beside the drawer closes it too; from it, every page is reachable.
    menu.click()
    page.mouse.click(PHONE["width"] - 10, 400)
    expect(sidebar).not_to_be_visible()
    menu.click()
    settings = {"en": "Settings", "fr": "Réglages"}[lang]
    sidebar.get_by_role("link", name=settings).click()
    page.wait_for_url(re.compile(r"/settings/$"))
    expect(page.locator("#language-select")).to_be_visible()
    shoot(page, "settings", lang)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_it_switches_the_language_in_settings(browser, app_server, viewport):
    page = browser.page(viewport, "en")
    sign_up(page, app_server, f"polyglot-{viewport['width']}")
    page.goto(f"{app_server.url}/settings/")
    page.select_option("#language-select", "fr")
    page.get_by_role("button", name="Change language").click()
    page.get_by_role("heading", name="Réglages").wait_for()
    assert page.locator("html").get_attribute("lang") == "fr"
    page.goto(f"{app_server.url}/")
    assert page.locator(".new-chat").text_content().strip() == "+ Nouvelle conversation"
    shoot(page, "new-chat", "fr")
    page.goto(f"{app_server.url}/settings/")
    page.select_option("#language-select", "en")
    page.get_by_role("button", name="Changer de langue").click()
    page.get_by_role("heading", name="Settings").wait_for()
    page.goto(f"{app_server.url}/")
    shoot(page, "new-chat", "en")


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_it_reaches_the_top_of_a_long_settings_page(browser, app_server, lang):
    # A short window: the memory settings page is taller than it.
    page = browser.page({"width": 1280, "height": 420}, lang)
    sign_up(page, app_server, f"tall-{lang}")
    page.goto(f"{app_server.url}/memory/settings/")
    page.evaluate("window.scrollTo(0, 0)")
    back = page.locator("main.auth-card a").first
    assert back.bounding_box()["y"] >= 0
    assert page.locator("#id_auto_retrieve").bounding_box()["y"] >= 0
    shoot(page, "memory-settings", lang)
    phone = browser.page(PHONE, lang)
    sign_up(phone, app_server, f"tall-phone-{lang}")
    phone.goto(f"{app_server.url}/memory/settings/")
    assert phone.locator("main.auth-card a").first.bounding_box()["y"] >= 0
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shoot(phone, "memory-settings", lang)


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_it_renames_the_open_chat_in_its_heading_and_tab(browser, app_server, fake_anthropic, lang):
    page = browser.page(DESKTOP, lang)
    first_chat(page, app_server, fake_anthropic, f"renamer-{lang}")
    item = page.locator(".conv-item.active")
    item.locator("summary").click()
    title = item.locator("input[name=title]")
    title.fill("Spring snow")
    title.press("Enter")
    page.locator("#conversation-title", has_text="Spring snow").wait_for()
    wait_until(page, "document.title.startsWith('Spring snow')")
    assert page.locator(".conv-item.active > a").inner_text().strip() == "Spring snow"

    # The menu is a dialog: focus moves in, Escape closes it and gives focus back.
    page.locator(".conv-item.active summary").click()
    assert page.locator(".conv-item.active .menu").get_attribute("role") == "dialog"
    wait_until(page, "document.activeElement.name === 'title'")
    page.keyboard.press("Escape")
    assert page.locator(".conv-item.active details").get_attribute("open") is None
    assert page.evaluate("document.activeElement.tagName") == "SUMMARY"


def test_it_follows_the_end_after_a_long_message_and_later_replies(
    browser, app_server, fake_anthropic
):
    page = browser.page({"width": 1280, "height": 700}, "en")
    first_chat(page, app_server, fake_anthropic, "long-writer")
    at_end = (
        "(() => { const l = document.getElementById('messages');"
        " return l.scrollHeight - l.scrollTop - l.clientHeight < 4; })()"
    )
    long_text = "\n".join(f"Line {n} of a long message." for n in range(80))
    fake_anthropic.reply(" ".join(f"word{n}" for n in range(300)), delay=0.01)
    page.fill("#composer-input", long_text)
    page.press("#composer-input", "Enter")
    page.locator("article.message.assistant .content.markdown").nth(1).wait_for()
    wait_until(page, at_end)
    fake_anthropic.reply("\n\n".join(f"Paragraph {n}." for n in range(40)))
    page.fill("#composer-input", "And then?")
    page.press("#composer-input", "Enter")
    page.locator("article.message.assistant .content.markdown").nth(2).wait_for()
    wait_until(page, at_end)
    shoot(page, "long-chat", "en")

    # A reader who scrolls up while an answer streams is left where they are.
    fake_anthropic.reply("\n\n".join(f"Part {n}." for n in range(60)), hold=True)
    page.fill("#composer-input", "Tell me more")
    page.press("#composer-input", "Enter")
    page.locator(".content.streaming", has_text="Part").wait_for()
    page.evaluate(
        "window.__scrolled = false; const l = document.getElementById('messages');"
        " l.addEventListener('scroll', () => { window.__scrolled = true; }, {once: true});"
        " l.scrollTop = 0;"
    )
    wait_until(page, "window.__scrolled")  # chat.js's own listener ran before this one
    fake_anthropic.release()
    page.locator("article.message.assistant .content.markdown").nth(3).wait_for()
    assert page.evaluate("document.getElementById('messages').scrollTop") < 50


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_it_opens_the_save_popover_in_view_and_the_memory_detail_as_a_modal(
    browser, app_server_with_memory, fake_anthropic, lang
):
    server = app_server_with_memory
    page = browser.page(DESKTOP, lang)
    first_chat(page, server, fake_anthropic, f"saver-{lang}", "Plan a ski trip to Chamonix")
    wait_for_memory(page, server)

    # The first message's popover: its Category field is in view, nothing over it.
    page.locator("article.message.assistant summary.memory-save-button").click()
    category = page.locator("article.message.assistant select[name=category]")
    category.wait_for()
    wait_until(
        page,
        "document.querySelector('article.message.assistant select[name=category]')"
        ".getBoundingClientRect().top >= "
        "document.getElementById('messages').getBoundingClientRect().top",
    )
    box = category.bounding_box()
    covering = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).closest('select')?.name",
        [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
    )
    assert covering == "category"
    wait_until(page, "document.activeElement.name === 'category'")  # focus moved in
    shoot(page, "save-popover", lang)
    page.keyboard.press("Escape")
    assert page.locator("details.memory-save").get_attribute("open") is None
    page.locator("article.message.assistant summary.memory-save-button").click()
    page.locator("article.message.assistant form.memory-save-modal button[type=submit]").click()
    page.locator("article.message.assistant .memory-save-done").wait_for()

    # The memory opens as a modal dialog over a backdrop; Escape closes it.
    page.locator(".memory-search input[type=search]").fill("Chamonix ski")
    result = page.locator("#memory-results .memory-result").first
    result.wait_for()
    result.click()
    modal = page.locator("dialog.memory-modal")
    modal.wait_for()
    wait_until(page, "document.querySelector('dialog.memory-modal:modal') !== null")
    backdrop = page.evaluate(
        "getComputedStyle(document.querySelector('dialog.memory-modal'), '::backdrop')"
        ".backgroundColor"
    )
    assert backdrop not in ("", "rgba(0, 0, 0, 0)")
    assert page.evaluate(
        "document.querySelector('dialog.memory-modal').contains(document.activeElement)"
    )
    shoot(page, "memory-detail", lang)
    page.keyboard.press("Escape")
    modal.wait_for(state="detached")
    assert page.evaluate("document.activeElement.classList.contains('memory-result')")

    # A click outside it closes it too.
    result.click()
    wait_until(page, "document.querySelector('dialog.memory-modal:modal') !== null")
    page.mouse.click(5, 5)
    modal.wait_for(state="detached")


def test_it_keeps_the_memory_unavailable_notice_when_the_answer_is_redrawn(
    browser, fake_anthropic_server, fake_anthropic
):
    # Memory on, but no server to reach: every turn goes on without it, and says so.
    server = AppServer(
        {
            "ANTHROPIC_BASE_URL": fake_anthropic_server.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-browser-tests",
            "ANTHROPIC_MAX_RETRIES": "0",
            "MCP_MEMORY_ENABLED": "true",
            "MCP_IKARIO_SERVER_URL": "",
            "MEMORY_AUTOSAVE": "false",
        }
    ).start()
    try:
        page = browser.page(DESKTOP, "en")
        browser.errors.clear()
        first_chat(page, server, fake_anthropic, "no-memory")
        answer = page.locator("article.message.assistant")
        answer.locator(".content.markdown").wait_for()  # redrawn as Markdown, settled
        assert "Memory is unavailable" in answer.locator(".notices").inner_text()
        shoot(page, "memory-unavailable", "en")
        page.close()  # before its server goes: no socket error in its console
    finally:
        server.stop()


# Every control's accessible name, as a screen reader gets it (aria-label, its label, text).
UNNAMED = """() => [...document.querySelectorAll(
    'button, summary, a[href], input:not([type=hidden]), select, textarea')]
  .filter((el) => {
    const label = el.getAttribute('aria-label') || el.getAttribute('aria-labelledby')
      || (el.labels && el.labels.length && el.labels[0].textContent.trim())
      || el.textContent.trim() || el.getAttribute('title') || el.getAttribute('placeholder');
    return !label;
  }).map((el) => el.outerHTML.slice(0, 120))"""


@pytest.mark.parametrize("lang", ["en", "fr"])
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_it_names_every_control_on_every_page(browser, app_server, fake_anthropic, viewport, lang):
    page = browser.page(viewport, lang)
    first_chat(page, app_server, fake_anthropic, f"named-{lang}-{viewport['width']}")
    chat_url = page.url
    pages = ["/", "/settings/", "/memory/settings/", "/memory/profile/"]
    for url in [chat_url, *(app_server.url + path for path in pages)]:
        page.goto(url)
        assert page.evaluate(UNNAMED) == [], url
    page.goto(f"{app_server.url}/memory/profile/")
    shoot(page, "profile", lang)


def test_it_sends_a_message_with_the_keyboard_alone(browser, app_server, fake_anthropic):
    page = browser.page(PHONE, "fr")
    sign_up(page, app_server, "keyboard-only")
    fake_anthropic.reply("Bien reçu.")
    # From the top of the page: Tab reaches the composer, Enter sends.
    page.keyboard.press("Tab")
    for _ in range(10):
        if page.evaluate("document.activeElement.id") == "composer-input":
            break
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "composer-input"
    page.keyboard.type("Bonjour")
    page.keyboard.press("Enter")
    page.locator("article.message.assistant .content.markdown", has_text="Bien reçu.").wait_for()
