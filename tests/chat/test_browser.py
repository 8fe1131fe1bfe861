"""The chat in a real browser: headless Chromium against Daphne, Claude = the fake API."""

import re

import pytest

from tests.fixtures.browser import sign_up
from tests.fixtures.fake_anthropic import HELD_AFTER, split_words

pytestmark = pytest.mark.browser

# Records every distinct text the streaming answer shows, as the page sees it.
RECORD_STREAM = """
window.__snapshots = [];
new MutationObserver(() => {
  const el = document.querySelector('.content.streaming');
  if (!el) return;
  const text = el.textContent;
  const last = window.__snapshots[window.__snapshots.length - 1];
  if (text && text !== last) window.__snapshots.push(text);
}).observe(document, {subtree: true, childList: true, characterData: true});
"""

ANSWER = "Take **warm gloves**, a thermos of tea and a map of the slopes."


def test_it_signs_up_chats_streams_and_keeps_the_answer(page, app_server, fake_anthropic):
    # The stream sends its first two pieces, then waits until the test releases it.
    fake_anthropic.reply(ANSWER, hold=True)
    held = "".join(split_words(ANSWER)[:HELD_AFTER])
    page.add_init_script(RECORD_STREAM)
    sign_up(page, app_server, "skier")

    page.fill("#composer-input", "What should I take skiing?")
    page.press("#composer-input", "Enter")

    page.wait_for_url(re.compile(r"/c/\d+/$"))
    page.locator(".content.streaming", has_text=held.strip()).wait_for()
    # The first pieces are on the page while the rest has not been written yet.
    assert page.locator(".content.streaming").inner_text().strip() == held.strip()
    fake_anthropic.release()
    answer = page.locator("article.message.assistant .content.markdown")
    answer.wait_for()
    assert answer.locator("strong").inner_text() == "warm gloves"
    snapshots = page.evaluate("window.__snapshots")
    assert len(snapshots) >= 2, snapshots  # arrived in pieces, not at once
    assert all(ANSWER.startswith(s) for s in snapshots), snapshots
    assert held.strip() in [s.strip() for s in snapshots]
    assert page.locator("#conversation-title").inner_text() == "What should I take skiing?"

    page.reload()
    assert page.locator("article.message.user").inner_text() == "What should I take skiing?"
    assert page.locator("article.message.assistant strong").inner_text() == "warm gloves"
    assert page.locator(".conv-item.active").inner_text().startswith("What should I take")


def test_it_sends_with_enter_keeps_shift_enter_and_recovers_from_errors(
    page, app_server, fake_anthropic
):
    fake_anthropic.reply("First answer.")
    sign_up(page, app_server, "writer")
    page.fill("#composer-input", "Hello")
    page.press("#composer-input", "Enter")
    page.locator("article.message.assistant .content.markdown").wait_for()

    # Shift+Enter is a new line, not a send.
    page.click("#composer-input")
    page.keyboard.type("line one")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("line two")
    assert page.input_value("#composer-input") == "line one\nline two"

    fake_anthropic.fail(500, "api_error", "The fake API broke")
    page.keyboard.press("Enter")
    error = page.locator(".error-box")
    error.wait_for()
    assert "The fake API broke" in error.inner_text()
    assert page.input_value("#composer-input") == ""
    assert page.locator("article.message.user").nth(1).inner_text() == "line one\nline two"

    fake_anthropic.reply("Recovered **fine**.")
    error.get_by_role("button", name="Retry").click()
    page.locator("article.message.assistant >> text=Recovered").wait_for()
    assert page.locator(".error-box").count() == 0
    assert page.locator("article.message.assistant").count() == 2


def test_it_stops_a_streaming_answer(page, app_server, fake_anthropic):
    # The stream sends two words, then waits until the test releases it.
    fake_anthropic.reply(" ".join(f"word{n}" for n in range(60)), hold=True)
    sign_up(page, app_server, "stopper")
    page.fill("#composer-input", "Talk a lot")
    page.press("#composer-input", "Enter")
    page.locator(".content.streaming", has_text="word1").wait_for()
    page.get_by_role("button", name="■ Stop").click()

    stopped = page.locator('article.message.assistant[data-status="stopped"]')
    stopped.wait_for()
    fake_anthropic.release()
    assert stopped.locator(".content").inner_text() == "word0 word1"
    page.reload()
    assert "Stopped." in page.locator('article[data-status="stopped"]').inner_text()


SEED_LONG_CHAT = """
from django.contrib.auth import get_user_model
from chat.models import Conversation, Message
user = get_user_model().objects.get(username={username!r})
other = get_user_model().objects.create_user({other!r}, password="x-" * 8)
old = Conversation.objects.create(user=user, title="Island plans")
for n in range(260):
    text = "We could sail to Zanzibar in June." if n == 6 else f"Filler message {{n}}."
    Message.objects.create(conversation=old, role=("user", "assistant")[n % 2], content=text)
Conversation.objects.create(user=user, title="Other").messages.create(role="user", content="Hi")
theirs = Conversation.objects.create(user=other, title="Not yours")
theirs.messages.create(role="user", content="Zanzibar is where I live, says someone else.")
print(old.messages.order_by("id")[6].pk)
"""


def test_it_searches_past_chats_and_opens_the_conversation_at_the_message(
    page, app_server, fake_anthropic
):
    from playwright.sync_api import expect

    sign_up(page, app_server, "islander")
    target = app_server.manage(
        "shell", "-c", SEED_LONG_CHAT.format(username="islander", other="stranger")
    ).split()[-1]  # the shell may say how many models it imported first

    page.fill("input[aria-label='Search chats']", "zanzib")
    hit = page.locator("#search-results .search-hit")
    expect(hit).to_have_count(1)
    assert hit.locator(".hit-title").inner_text() == "Island plans"
    assert hit.locator("mark").inner_text() == "Zanzibar"
    assert "someone else" not in page.locator("#search-results").inner_text()

    hit.click()

    page.wait_for_url(re.compile(rf"/c/\d+/\?m={target}#message-{target}$"))
    message = page.locator(f"#message-{target}")
    expect(message).to_have_class(re.compile(r"\bfound\b"))
    expect(message).to_be_in_viewport()
    assert "sail to Zanzibar" in message.inner_text()
    # The latest messages are still there, after a note of what lies between.
    expect(page.locator(".message-gap")).to_contain_text("later messages not shown")
    expect(page.locator("article.message", has_text="Filler message 259.")).to_have_count(1)

    page.fill("input[aria-label='Search chats']", "no such word anywhere")
    expect(page.locator("#search-results")).to_contain_text("No chats match")
