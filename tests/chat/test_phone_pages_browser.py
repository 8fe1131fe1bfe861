"""On a 390 px phone, in English and in French, with an account that has lived a little
(a long chat title, a recall log, an edited profile, memories) and no API key (the
"Offline responder" badge in the header): no page is wider than the screen, the header
keeps the title readable, nothing is clipped or left unstyled."""

from __future__ import annotations

import re

import pytest

from tests.chat.test_ui_browser import PHONE, browser, shoot, sign_up  # noqa: F401
from tests.fixtures.browser import AppServer
from tests.fixtures.lived_in import LONG_TITLE, lived_in

pytestmark = pytest.mark.browser

PAGES = ["/memory/", "/memory/profile/", "/memory/settings/"]


@pytest.fixture(scope="module")
def offline_app():
    """The app as `make run` starts it with no key: memory on, the offline responder."""
    server = AppServer({"MCP_MEMORY_ENABLED": "true", "ANTHROPIC_API_KEY": ""}).start()
    yield server
    server.stop()


def _width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


def _fits(page, selector: str) -> bool:
    """Whether an input's placeholder shows whole (written in it, it needs no scrolling)."""
    return page.locator(selector).evaluate(
        "e => { const v = e.value; e.value = e.placeholder;"
        " const fits = e.scrollWidth <= e.clientWidth; e.value = v; return fits; }"
    )


def _styled(page, selector: str) -> bool:
    """Whether a button has the app's look, not the browser's grey default."""
    return page.locator(selector).evaluate("e => getComputedStyle(e).borderRadius !== '0px'")


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_no_page_is_wider_than_the_phone(browser, offline_app, lang):  # noqa: F811
    from playwright.sync_api import expect

    page = browser.page(PHONE, lang)
    username = f"phone-pages-{lang}"
    sign_up(page, offline_app, username)
    lived_in(offline_app, username)
    page.goto(f"{offline_app.url}/")
    page.goto(offline_app.url + page.locator(".conv-item a").first.get_attribute("href"))

    # The header: the title keeps its words beside "Offline responder" and the model.
    expect(page.locator(".offline-badge")).to_be_visible()
    expect(page.locator("#conversation-title")).to_have_text(LONG_TITLE)
    title = page.locator(".topbar .title")
    assert title.bounding_box()["width"] > 250
    assert _width(page) <= PHONE["width"], "the chat page"
    shoot(page, "phone-chat", lang)

    page.locator("[data-drawer-open]").click()
    expect(page.locator("#sidebar")).to_be_in_viewport(ratio=1)
    assert _fits(page, ".chat-search input"), "the sidebar search's placeholder is clipped"

    for path in PAGES:
        page.goto(f"{offline_app.url}{path}")
        assert _width(page) <= PHONE["width"], path
    page.goto(f"{offline_app.url}/memory/profile/")
    expect(page.locator("#profile-built")).to_be_visible()
    assert _styled(page, "#profile-built + form button")
    shoot(page, "phone-profile", lang)

    # A passing state's card says until when; a trace's Close looks like a button.
    page.goto(f"{offline_app.url}/memory/")
    until = {"en": "until ", "fr": "jusqu’au "}[lang]
    expect(page.locator(".memory-expires")).to_have_count(1)
    expect(page.locator(".memory-expires")).to_contain_text(until)
    shoot(page, "phone-memory", lang)
    page.locator(".memory-trace-button").first.click()
    expect(page.locator("#memory-trace .memory-close")).to_be_visible()
    assert _styled(page, "#memory-trace .memory-close")


def test_the_incognito_notice_holds_its_leave_button(browser, offline_app):  # noqa: F811
    from playwright.sync_api import expect

    page = browser.page(PHONE, "en")
    sign_up(page, offline_app, "phone-incognito")
    page.goto(f"{offline_app.url}/?incognito=1")
    page.fill("#composer-input", "Just between us")
    page.press("#composer-input", "Enter")
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    leave = page.locator("#incognito-notice").get_by_role("button", name="Leave and delete it")
    expect(leave).to_be_visible()
    notice, button = page.locator("#incognito-notice").bounding_box(), leave.bounding_box()
    assert (
        notice["y"] <= button["y"]
        and button["y"] + button["height"] <= notice["y"] + notice["height"]
    )
