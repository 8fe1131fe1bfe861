"""The screens a newcomer met with a lived-in account, as docs/screenshots/ keeps them:
the sidebar search among 50 chats, the phone's header, the profile, the memory card's
end date, the recall log and the incognito notice; desktop (1280x800) and phone
(390x844), English and French.

The app as `make run` starts it with no API key (memory on, the offline responder), in
Debian's /usr/bin/chromium, each screen the viewport only (a handful of small PNGs).

Usage: .venv/bin/python bench/screenshots.py [folder]   (`make screenshots`)
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# Development settings, as `make run` has them (the memory server's fixture reads them).
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ikario_clone.settings")
os.environ.setdefault("DEBUG", "true")

from tests.fixtures.browser import CHROMIUM, CHROMIUM_ARGS, AppServer, sign_up  # noqa: E402
from tests.fixtures.lived_in import NEEDLE, lived_in, many_chats  # noqa: E402
from tests.fixtures.users import PASSWORD  # noqa: E402

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
LOCALES = {"en": "en-US", "fr": "fr-FR"}
USER = "newcomer"


class Screens:
    def __init__(self, browser, server, folder: Path):
        self.browser, self.server, self.folder = browser, server, folder

    def page(self, viewport, lang):
        context = self.browser.new_context(viewport=viewport, locale=LOCALES[lang])
        context.set_default_timeout(30_000)
        page = context.new_page()
        page.goto(f"{self.server.url}/accounts/login/")
        page.fill("#id_username", USER)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{self.server.url}/")
        return page

    def shoot(self, page, name: str, lang: str) -> None:
        size = "phone" if page.viewport_size["width"] < 800 else "desktop"
        path = self.folder / f"{name}-{lang}-{size}.png"
        page.screenshot(path=str(path))
        print(f"{path.relative_to(ROOT)}  {path.stat().st_size // 1024} KB")


def sidebar_search(screens: Screens, viewport, lang: str) -> None:
    from playwright.sync_api import expect

    page = screens.page(viewport, lang)
    if viewport is PHONE:
        page.locator("[data-drawer-open]").click()
        expect(page.locator("#sidebar")).to_be_in_viewport(ratio=1)  # slid in
    page.fill(".chat-search input", NEEDLE)
    page.locator(".search-hit").wait_for()
    screens.shoot(page, "sidebar-search", lang)
    page.context.close()


def chat_header(screens: Screens, viewport, lang: str) -> None:
    page = screens.page(viewport, lang)
    chat = page.locator(".conv-item a", has_text="Planning the family").get_attribute("href")
    page.goto(screens.server.url + chat)
    screens.shoot(page, "chat-header", lang)
    page.context.close()


def profile(screens: Screens, viewport, lang: str) -> None:
    page = screens.page(viewport, lang)
    page.goto(f"{screens.server.url}/memory/profile/")
    page.locator("#profile-built").scroll_into_view_if_needed()
    screens.shoot(page, "profile", lang)
    page.context.close()


def recall_log(screens: Screens, viewport, lang: str) -> None:
    page = screens.page(viewport, lang)
    page.goto(f"{screens.server.url}/memory/settings/")
    page.locator("#memory-retrievals").scroll_into_view_if_needed()
    screens.shoot(page, "recall-log", lang)
    page.context.close()


def memory_card(screens: Screens, viewport, lang: str) -> None:
    page = screens.page(viewport, lang)
    page.goto(f"{screens.server.url}/memory/")
    page.locator(".memory-expires").scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, 200)")  # the card in the middle, not at the very top
    screens.shoot(page, "memory-card", lang)
    page.context.close()


def incognito(screens: Screens, viewport, lang: str) -> None:
    page = screens.page(viewport, lang)
    page.goto(f"{screens.server.url}/?incognito=1")
    page.fill("#composer-input", "Just between us" if lang == "en" else "Entre nous")
    page.press("#composer-input", "Enter")
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    page.locator("article.message.assistant .content.markdown").wait_for()
    screens.shoot(page, "incognito", lang)
    page.context.close()


# Each changed screen once, both languages and both sizes across them (a handful of PNGs).
SHOTS = [
    (sidebar_search, DESKTOP, "en"),
    (sidebar_search, PHONE, "fr"),
    (chat_header, PHONE, "en"),
    (chat_header, PHONE, "fr"),
    (profile, PHONE, "fr"),
    (recall_log, PHONE, "en"),
    (memory_card, DESKTOP, "fr"),
    (incognito, DESKTOP, "en"),
]


def main() -> None:
    from playwright.sync_api import sync_playwright

    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    server = AppServer({"MCP_MEMORY_ENABLED": "true", "ANTHROPIC_API_KEY": ""}).start()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
            )
            first = browser.new_page()
            sign_up(first, server, USER)
            first.close()
            many_chats(server, USER, 50)
            lived_in(server, USER)
            screens = Screens(browser, server, folder)
            for screen, viewport, lang in SHOTS:
                screen(screens, viewport, lang)
            browser.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
