"""The memory settings page in a real browser: htmx saves in place, bad values are refused."""

import pytest

from tests.fixtures.browser import sign_up

pytestmark = pytest.mark.browser


def test_it_saves_memory_settings_in_place_and_refuses_bad_values(page, app_server):
    sign_up(page, app_server, "settings-tuner")
    page.goto(f"{app_server.url}/memory/settings/")
    assert page.input_value("#id_max_results") == "4"
    assert page.input_value("#id_min_score") == "0.5"

    page.fill("#id_max_results", "7")
    page.fill("#id_min_score", "0.65")
    page.uncheck("#id_auto_retrieve")
    page.click("#memory-settings-form button[type=submit]")
    page.locator("#memory-settings-form .saved").wait_for()
    assert page.url == f"{app_server.url}/memory/settings/"  # swapped in place by htmx

    page.reload()
    assert page.input_value("#id_max_results") == "7"
    assert page.input_value("#id_min_score") == "0.65"
    assert page.is_checked("#id_auto_retrieve") is False
    assert page.locator("#id_memory_enabled").count() == 0  # on the memory page's Controls

    # The browser's own range check would stop 11 before it is sent: remove it, as a
    # hand-made request would, and let the server refuse it.
    page.evaluate("document.getElementById('id_max_results').removeAttribute('max')")
    page.fill("#id_max_results", "11")
    page.click("#memory-settings-form button[type=submit]")
    error = page.locator("#memory-settings-form .form-error")
    error.wait_for()
    assert "less than or equal to 10" in error.inner_text()
    # Only the form was swapped: the rest of the page is still there.
    assert page.locator("h2", has_text="Latest automatic recalls").count() == 1
    assert page.locator("a", has_text="Back to chats").count() == 1
    page.reload()
    assert page.input_value("#id_max_results") == "7"
