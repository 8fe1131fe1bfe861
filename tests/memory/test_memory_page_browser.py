"""The memory page and the memory controls in a real browser (headless Chromium against
Daphne, the real ikario_rag subprocess): reach /memory from the sidebar and the indicator,
see a memory saved elsewhere arrive live, edit, delete and undo, search in each mode,
trace, forget a topic, pause memory, ask "why did Claude know this?", switch memory off
for one chat; no console error and no CSP violation on the way.
"""

import re
import time

import pytest
from django.conf import settings

from tests.deploy.test_csp_browser import watch
from tests.fixtures.browser import screenshot, sign_up, wait_for_memory

pytestmark = pytest.mark.browser

ANSWER = "Chamonix in February is a fine idea: book the Aiguille du Midi early."


def _problems(seen: dict) -> list[str]:
    """Console errors and CSP violations, but the /favicon.ico 404 Chromium asks for on its
    own (issue 13 lists it; it is fixed apart from the memory page)."""
    return [p for p in seen["problems"] if "/favicon.ico)" not in p]


def _chat(page, fake_anthropic, text: str, answer: str) -> None:
    fake_anthropic.reply(answer)
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")
    page.locator("article.message.assistant .content.markdown", has_text=answer).wait_for()


def test_it_curates_memory_from_the_memory_page(page, app_server_with_memory, fake_anthropic):
    server = app_server_with_memory
    seen = watch(page)
    sign_up(page, server, "page-curator")
    wait_for_memory(page, server)
    _chat(page, fake_anthropic, "Help me plan a ski trip to Chamonix", ANSWER)
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    chat_url = page.url

    # The sidebar leads to /memory; nothing yet.
    page.locator("#memory-page-link").click()
    page.wait_for_url(f"{server.url}/memory/")
    page.locator("#memory-empty", has_text="No memories yet.").wait_for()
    page.locator("#memory-indicator.status-connected").wait_for()

    # Another tab saves the conversation: this one shows it without a reload, pulses.
    other = page.context.new_page()
    other.goto(chat_url)
    other.locator("article.message.assistant summary.memory-save-button").click()
    form = other.locator("article.message.assistant form.memory-save-modal")
    form.locator("select[name=category]").select_option("fondatrice")
    form.locator("input[name=tags]").fill("ski")
    form.locator("button[type=submit]").click()
    other.locator(".toast", has_text="Conversation saved to memory.").wait_for()
    card = page.locator("#memory-list article.memory-card.memory-new")
    card.wait_for()
    assert "Help me plan a ski trip to Chamonix" in card.inner_text()
    assert card.locator(".badge-fondatrice").inner_text() == "Foundational"
    page.locator("#memory-indicator.pulse").wait_for()
    page.locator("#memory-counts .badge-fondatrice .count", has_text="1").wait_for()
    assert page.locator("#memory-counts .memory-total-count").inner_text() == "1 memory"
    screenshot(page, "memory-page-live-card")
    other.close()

    # Edit in place: the new text, the old one kept as an earlier version.
    memory_id = card.get_attribute("data-memory-id")
    card.locator(".memory-edit-button").click()
    editor = page.locator(f"#memory-{memory_id} form.memory-edit")
    editor.locator("textarea[name=content]").fill("Ski trip to Chamonix in February <b>")
    editor.locator("select[name=category]").select_option("thematique")
    screenshot(page, "memory-page-edit")
    editor.locator("button[type=submit]").click()
    edited = page.locator(f"#memory-{memory_id} .memory-card-content")
    edited.filter(has_text="Ski trip to Chamonix in February <b>").wait_for()
    assert page.locator(f"#memory-{memory_id} .badge-thematique").count() == 1
    assert "1 earlier version" in page.locator(f"#memory-{memory_id}").inner_text()

    # Delete, then undo: the same memory is back.
    page.locator(f"#memory-{memory_id} .memory-delete-button").click()
    page.locator(".memory-undo", has_text="Memory deleted.").wait_for()
    screenshot(page, "memory-page-undo")
    page.locator(".memory-undo-button").click()
    edited.wait_for()
    assert page.locator(".memory-undo").count() == 0

    # Search, in Text mode: the card comes with a coloured relevance score.
    page.locator("#memory-filters input[name=mode][value=text]").check()
    page.fill("#memory-q", "Chamonix")
    page.locator("#memory-list-summary", has_text="1 relevant memory of 1").wait_for()
    score = page.locator("#memory-list .score").get_attribute("class")
    assert re.fullmatch(r"score score-\d+", score)
    assert "mode=text" in page.url
    screenshot(page, "memory-page-search-text")

    # Trace from the card: the concept's timeline in a dialog, which closes.
    page.locator(f"#memory-{memory_id} .memory-trace-button").click()
    trace = page.locator("dialog#memory-trace")
    trace.wait_for()
    assert "Chamonix" in trace.inner_text()
    screenshot(page, "memory-page-trace")
    trace.locator("button.memory-close").click()
    trace.wait_for(state="hidden")

    # Forget a topic: what would go is shown first, deleted only on confirmation.
    page.goto(f"{server.url}/memory/")
    page.locator("#memory-forget summary").click()
    page.fill("#forget-topic", "ski trip to Chamonix")
    page.locator("#memory-forget button[type=submit]").click()
    page.locator(".forget-preview li", has_text="Ski trip to Chamonix").wait_for()
    assert page.locator(f"#memory-{memory_id}").count() == 1  # nothing gone yet
    screenshot(page, "memory-page-forget-preview")
    page.locator("#forget-confirm").click()
    page.locator("#forget-done", has_text="1 memory about").wait_for()
    page.locator("#memory-empty").wait_for()

    # Pause memory: the switch says so, and so does the save button in the chat.
    page.locator("#control-paused").click()
    page.locator("#control-paused[aria-checked=true]").wait_for()
    screenshot(page, "memory-page-paused")
    page.goto(chat_url)
    page.locator("article.message.assistant .memory-save-paused").wait_for()

    # The indicator leads to /memory too.
    page.locator("#memory-indicator summary").click()
    page.locator("#memory-indicator .memory-dashboard-link a").click()
    page.wait_for_url(f"{server.url}/memory/")
    assert _problems(seen) == [], seen["problems"]


def test_it_explains_a_recall_and_switches_memory_off_for_one_chat(
    page, app_server_with_memory, fake_anthropic
):
    server = app_server_with_memory
    seen = watch(page)
    sign_up(page, server, "recall-reader")
    wait_for_memory(page, server)
    _chat(page, fake_anthropic, "My sister Ana lives in Lisbon", "Lisbon is lovely.")
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    page.locator("article.message.assistant summary.memory-save-button").click()
    page.locator("article.message.assistant form.memory-save-modal button[type=submit]").click()
    page.locator(".memory-save-done").wait_for()

    # Auto-recall finds it for the next message: one click says what Claude was given.
    _chat(page, fake_anthropic, "Where does my sister Ana live?", "In Lisbon.")
    why = page.locator("article.message.assistant").last.locator(".memory-why")
    why.wait_for()  # the answer is redrawn once done, with its actions
    why.click()
    recall = page.locator("dialog#memory-recall")
    recall.wait_for()
    text = recall.inner_text()
    assert "My sister Ana lives in Lisbon" in text
    assert re.search(r"\d+ tokens", text) and re.search(r"\d+%", text)
    assert "0 minutes ago" not in text
    screenshot(page, "chat-why-did-claude-know")
    recall.locator("button.memory-close").click()
    recall.wait_for(state="hidden")

    # The conversation's menu has its memory switch: off, and the next turn gets no recall.
    page.locator(".conv-item.active summary").click()
    switch = page.locator(".conv-item.active .memory-conversation-switch button")
    assert switch.inner_text() == "Memory: on in this chat"
    screenshot(page, "chat-menu-memory-switch")
    switch.click()
    page.locator(
        ".conv-item.active .memory-conversation-switch button[aria-checked=false]"
    ).wait_for()
    page.reload()
    _chat(page, fake_anthropic, "And where does Ana work?", "I do not know.")
    sent = fake_anthropic.last_request
    assert "Lisbon" not in str(sent.get("system", ""))
    assert not any(t["name"] == "save_memory" for t in sent.get("tools") or [])
    assert _problems(seen) == [], seen["problems"]


def test_it_brings_what_claude_saved_to_the_open_memory_page(
    page, app_server_with_memory, fake_anthropic
):
    server = app_server_with_memory
    seen = watch(page)
    sign_up(page, server, "live-watcher")
    wait_for_memory(page, server)
    page.goto(f"{server.url}/memory/")
    page.locator("#memory-empty").wait_for()
    page.locator("#memory-indicator.status-connected").wait_for()

    chat = page.context.new_page()
    chat.goto(f"{server.url}/")
    fake_anthropic.tool_use(
        "save_memory", {"content": "Ana's cat is called <Miso>", "category": "thematique"}
    )
    _chat(chat, fake_anthropic, "Remember that Ana's cat is called Miso", "Noted.")
    chat.locator(".toast", has_text="Saved to memory: “Ana's cat is called <Miso>”").wait_for()
    # The tool line is a chip that opens into readable text, not JSON.
    chip = chat.locator("article.message.assistant details.tool-call")
    assert chip.locator("summary").inner_text() == "Saved to memory"
    chip.locator("summary").click()
    detail = chip.locator(".tool-detail").inner_text()
    assert "Ana's cat is called <Miso>" in detail and "{" not in detail
    screenshot(chat, "chat-tool-chip-open")

    card = page.locator("#memory-list article.memory-card.memory-new")
    card.wait_for()
    assert card.locator(".memory-card-content").inner_text() == "Ana's cat is called <Miso>"
    assert card.locator(".badge-thematique").count() == 1
    page.locator("#memory-indicator.pulse").wait_for()
    page.locator(".toast", has_text="Saved to memory").wait_for()
    screenshot(page, "memory-page-saved-by-claude")
    assert _problems(seen) == [], seen["problems"]


def test_it_keeps_an_incognito_chat_out_of_history_and_memory(
    page, app_server_with_memory, fake_anthropic
):
    server = app_server_with_memory
    seen = watch(page)
    sign_up(page, server, "ghost-writer")
    wait_for_memory(page, server)
    page.locator("#incognito-chat").click()
    page.locator("#incognito-notice").wait_for()
    _chat(page, fake_anthropic, "My secret plan is a surprise party", "Fun!")
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    chat_url = page.url

    # No save button, no "why", nothing in the sidebar; its socket still works.
    assert page.locator(".incognito-badge").count() == 1
    screenshot(page, "chat-incognito")
    assert page.locator("article.message.assistant .memory-save").count() == 0
    assert page.locator(f'#conversation-list a[href="{chat_url[len(server.url) :]}"]').count() == 0
    sent = fake_anthropic.last_request
    assert not any(t["name"] == "save_memory" for t in sent.get("tools") or [])

    # Leaving for the memory page ends it once its grace period is over (the memory page's
    # GET itself changes nothing): nothing saved, the chat is gone.
    page.locator("#memory-page-link").click()
    page.locator("#memory-empty", has_text="No memories yet.").wait_for()
    deadline = time.monotonic() + settings.CHAT_INCOGNITO_GRACE + 60
    while page.request.get(chat_url).status != 404:
        assert time.monotonic() < deadline, "the incognito chat outlived its grace period"
        page.wait_for_timeout(500)
    page.reload()
    page.locator("#memory-empty", has_text="No memories yet.").wait_for()
    assert _problems(seen) == [], seen["problems"]


def test_it_edits_the_profile_moves_memories_and_resets(
    page, app_server_with_memory, fake_anthropic, tmp_path
):
    server = app_server_with_memory
    seen = watch(page)
    sign_up(page, server, "profile-keeper")
    wait_for_memory(page, server)
    _chat(page, fake_anthropic, "I play the cello in Lyon", "A fine instrument.")
    page.locator("article.message.assistant summary.memory-save-button").click()
    page.locator("article.message.assistant form.memory-save-modal button[type=submit]").click()
    page.locator(".memory-save-done").wait_for()
    page.goto(f"{server.url}/memory/")

    # The profile, at the top, edited in place.
    page.locator("#memory-profile-edit").click()
    page.locator("#memory-profile-section textarea").fill("Plays the cello. Lives in Lyon.")
    page.locator("#memory-profile-section button[type=submit]").click()
    page.locator("#memory-profile-text", has_text="Plays the cello. Lives in Lyon.").wait_for()
    page.locator(".toast", has_text="Profile saved.").wait_for()
    screenshot(page, "memory-page-profile")

    # Export, then import the same file: nothing added twice.
    page.locator("#memory-transfer summary").click()
    with page.expect_download() as download:
        page.locator("#memory-export").click()
    exported = tmp_path / "export.json"
    download.value.save_as(exported)
    assert "I play the cello in Lyon" in exported.read_text()
    page.set_input_files("#import-file", str(exported))
    page.locator("#memory-transfer button[type=submit]").click()
    page.locator("#import-done", has_text="0 imported, 1 already in memory").wait_for()

    # Reset: refused until the phrase is typed, then everything goes.
    page.locator("#memory-controls .memory-reset summary").click()
    page.fill("#reset-confirmation", "yes")
    page.locator("#memory-controls .memory-reset button[type=submit]").click()
    page.locator("#memory-controls .form-error", has_text="reset my memory").wait_for()
    assert page.locator("#memory-list article.memory-card").count() == 1
    screenshot(page, "memory-page-reset-refused")
    page.fill("#reset-confirmation", "reset my memory")
    page.locator("#memory-controls .memory-reset button[type=submit]").click()
    page.locator("#reset-done", has_text="1 memory deleted").wait_for()
    page.locator("#memory-empty").wait_for()
    page.locator("#memory-profile-text", has_text="Nothing yet").wait_for()

    # Import the export back: the memory returns.
    page.set_input_files("#import-file", str(exported))
    page.locator("#memory-transfer button[type=submit]").click()
    page.locator("#import-done", has_text="1 imported").wait_for()
    page.locator("#memory-list .memory-card", has_text="I play the cello in Lyon").wait_for()
    # Chromium logs every 4xx answer: the refused confirmation's, and nothing else.
    refused = f"400 (Bad Request) ({server.url}/memory/reset)"
    assert [p for p in _problems(seen) if refused not in p] == [], seen["problems"]
