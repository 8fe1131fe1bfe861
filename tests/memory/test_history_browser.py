"""Bringing one's history from ChatGPT in a real browser: the upload on /memory, its
progress followed to the summary, the chats then listed under their source in the sidebar.

Headless Chromium against Daphne, its worker and the real ikario_rag subprocess.
"""

import json

import pytest

from tests.deploy.test_csp_browser import watch
from tests.fixtures.browser import screenshot, sign_up, wait_for_memory
from tests.fixtures.exports import branched_chatgpt_conversation, write_json, write_zip

pytestmark = pytest.mark.browser


def _export(tmp_path):
    newer = branched_chatgpt_conversation("2025-03-02").as_dict()
    older = json.loads(
        json.dumps(branched_chatgpt_conversation("2024-01-10").as_dict()).replace(
            "Moving to Lyon", "Older chat"
        )
    )
    conversations = write_json(tmp_path / "conversations.json", [newer, older])
    return write_zip(tmp_path / "chatgpt-export.zip", {"conversations.json": conversations})


def test_a_chatgpt_zip_uploaded_on_the_memory_page_becomes_past_chats(
    page, app_server_with_memory, tmp_path
):
    server = app_server_with_memory
    seen = watch(page)
    sign_up(page, server, "history-upload")
    wait_for_memory(page, server)
    page.goto(f"{server.url}/memory/")

    export = _export(tmp_path)
    page.locator("#memory-history summary").click()
    page.set_input_files("#history-file", str(export))
    page.locator("#memory-history button[type=submit]").click()

    # The job's progress follows itself to the summary (the worker runs it).
    done = page.locator("#history-done")
    done.wait_for(timeout=120_000)
    assert done.inner_text().startswith("2 chats, ")
    assert "kept out as secrets." in done.inner_text()
    screenshot(page, "memory-history-import-done")

    # Importing it again adds nothing, and says so.
    page.set_input_files("#history-file", str(export))
    page.locator("#memory-history button[type=submit]").click()
    page.locator("#history-already", has_text="2 were already here").wait_for(timeout=120_000)

    page.goto(f"{server.url}/")
    sidebar = page.locator("#sidebar")
    sidebar.get_by_text("From ChatGPT").wait_for()
    assert sidebar.get_by_text("Moving to Lyon").count() == 1
    assert sidebar.get_by_text("Older chat").count() == 1
    assert seen == {"problems": [], "foreign requests": []}


def test_a_damaged_file_is_refused_on_the_page_with_what_is_wrong(
    page, app_server_with_memory, tmp_path
):
    server = app_server_with_memory
    sign_up(page, server, "history-damaged")
    page.goto(f"{server.url}/memory/")
    bad = tmp_path / "conversations.json"
    bad.write_text('{"not": "a list"}')

    page.locator("#memory-history summary").click()
    page.set_input_files("#history-file", str(bad))
    page.locator("#memory-history button[type=submit]").click()

    error = page.locator("#history-error")
    error.wait_for()
    assert "a list of conversations was expected" in error.inner_text()
