"""The chat page with a real amount of history (50 and 500 chats, built in bulk): the
app's frame is the viewport, only the list and the conversation scroll, and a sidebar
search shows its hits whatever the number of chats, on a desktop and on a phone."""

from __future__ import annotations

import re

import pytest

from tests.chat.test_ui_browser import DESKTOP, PHONE, browser, sign_up  # noqa: F401
from tests.fixtures.lived_in import NEEDLE, many_chats

pytestmark = pytest.mark.browser


def _fits_the_viewport(page) -> None:
    height = page.viewport_size["height"]
    assert page.evaluate("document.documentElement.scrollHeight") <= height
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]


def _wheel_leaves_the_window(page, selector: str, down: bool = True) -> int:
    """The wheel over `selector` scrolls what is under it, never the window: how far
    `selector` scrolled."""
    box = page.locator(selector).bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    before = page.locator(selector).evaluate("e => e.scrollTop")
    for _ in range(2):
        page.mouse.wheel(0, 3000 if down else -3000)
    assert page.evaluate("window.scrollY") == 0
    return abs(page.locator(selector).evaluate("e => e.scrollTop") - before)


@pytest.mark.parametrize("count", [50, 500])
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_it_keeps_the_page_in_the_viewport_and_shows_search_hits(
    browser,  # noqa: F811
    app_server_with_memory,
    viewport,
    count,
):
    from playwright.sync_api import expect

    app_server = app_server_with_memory  # its sidebar panel below the list, as `make run` has it
    page = browser.page(viewport, "en")
    username = f"many-{count}-{viewport['width']}"
    sign_up(page, app_server, username)
    many_chats(app_server, username, count)
    page.goto(f"{app_server.url}/")
    expect(page.locator(".conv-item")).to_have_count(40)  # a page of the list, "Show more" after
    _fits_the_viewport(page)

    # A chat opened: the window stays put, the wheel scrolls the messages.
    page.goto(f"{app_server.url}{page.locator('.conv-item a').nth(3).get_attribute('href')}")
    page.locator("article.message.assistant").first.wait_for()
    _fits_the_viewport(page)
    assert _wheel_leaves_the_window(page, "#messages", down=False) > 0  # opened at the end

    if viewport is PHONE:
        page.locator("[data-drawer-open]").click()
        expect(page.locator("#sidebar")).to_be_in_viewport(ratio=1)  # slid in
    assert _wheel_leaves_the_window(page, "#conversation-list") > 0
    page.fill(".chat-search input", NEEDLE)
    hit = page.locator(".search-hit")
    expect(hit).to_have_count(1)
    expect(hit).to_be_in_viewport()
    assert hit.bounding_box()["height"] > 30  # the title and the snippet, not a sliver
    _fits_the_viewport(page)
    hit.click()
    page.wait_for_url(re.compile(r"/c/\d+/\?m=\d+#message-\d+$"))
    expect(page.locator("article.message.user").filter(has_text=NEEDLE)).to_be_visible()

    # Deleted while open: the page goes to a new chat, no address left that reloads to a 404.
    page.on("dialog", lambda dialog: dialog.accept())
    if viewport is PHONE:
        page.locator("[data-drawer-open]").click()
        expect(page.locator("#sidebar")).to_be_in_viewport(ratio=1)
    page.locator(".conv-item.active summary").click()
    page.locator(".conv-item.active").get_by_role("button", name="Delete").click()
    page.wait_for_url(f"{app_server.url}/")
    page.reload()
    expect(page.locator(".chat.empty #composer-input")).to_be_visible()
