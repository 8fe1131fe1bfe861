"""The chat page's own behaviours in a real browser (issue 23, "The chat"): the header's
model, an answer that outlives its page, deleting the open chat, toasts, titles."""

import re

import pytest

from tests.fixtures.browser import sign_up
from tests.fixtures.fake_anthropic import HELD_AFTER, split_words

pytestmark = pytest.mark.browser


def _send(page, text: str) -> None:
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")


def _conversation_id(page) -> str:
    return re.search(r"/c/(\d+)/", page.url).group(1)


def test_a_model_picked_mid_conversation_answers_the_next_message(page, app_server, fake_anthropic):
    sign_up(page, app_server, "modelpicker")
    _send(page, "First question")
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    page.locator("article.message.assistant .content.markdown").wait_for()
    first_model = fake_anthropic.last_request["model"]

    other = next(
        name
        for name in page.locator("#model-select option").all_inner_texts()
        if name != first_model
    )
    with page.expect_response(re.compile(r"/model/$")):
        page.select_option("#model-select", other)
    _send(page, "Second question")
    page.locator("article.message.assistant .content.markdown").nth(1).wait_for()

    assert fake_anthropic.last_request["model"] == other
    assert page.locator("article.message.assistant .model").nth(1).inner_text() == other


def test_an_answer_goes_on_when_its_page_is_left_and_a_returning_page_follows_it(
    page, app_server, fake_anthropic
):
    words = [f"word{n}" for n in range(40)]
    fake_anthropic.reply(" ".join(words), hold=True)
    held = "".join(split_words(" ".join(words))[:HELD_AFTER]).strip()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    sign_up(page, app_server, "wanderer")
    _send(page, "Talk a lot")
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    conversation = page.url
    page.locator(".content.streaming", has_text=held).wait_for()

    page.goto(f"{app_server.url}/settings/")  # the page is left mid-answer
    page.goto(conversation)  # and comes back while it is still being written
    streaming = page.locator('article.message.assistant[data-status="streaming"]')
    # The answer so far is shown, and Stop is offered.
    streaming.locator(".content.streaming", has_text=held).wait_for()
    assert page.locator("#stop-button").is_visible()

    fake_anthropic.release()  # the rest streams to the page that came back
    done = page.locator('article.message.assistant[data-status="complete"]')
    done.wait_for()
    assert done.locator(".content").inner_text() == " ".join(words)
    assert page.locator("article.message.assistant").count() == 1
    assert "Stopped." not in page.locator("#messages").inner_text()

    page.reload()
    assert page.locator("article.message.assistant .content").inner_text() == " ".join(words)
    assert [e for e in errors if "favicon.ico" not in e] == []


def test_stop_from_another_tab_stops_the_answer(page, app_server, fake_anthropic):
    fake_anthropic.reply(" ".join(f"word{n}" for n in range(40)), hold=True)
    sign_up(page, app_server, "twotabs")
    _send(page, "Talk a lot")
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    page.locator(".content.streaming", has_text="word1").wait_for()

    other = page.context.new_page()
    other.goto(page.url)
    other.locator(".content.streaming", has_text="word1").wait_for()
    other.get_by_role("button", name="■ Stop").click()

    for tab in (other, page):
        tab.locator('article.message.assistant[data-status="stopped"]').wait_for()
    fake_anthropic.release()
    assert page.locator("article.message.assistant .content").inner_text() == "word0 word1"


def test_deleting_the_open_chat_lands_on_a_new_chat(page, app_server, fake_anthropic):
    sign_up(page, app_server, "deleter")
    _send(page, "Short-lived chat")
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    page.locator("article.message.assistant .content.markdown").wait_for()
    deleted = page.url

    page.on("dialog", lambda dialog: dialog.accept())
    page.locator(".conv-item.active summary").click()
    page.locator(".conv-item.active").get_by_role("button", name="Delete").click()

    page.wait_for_url(lambda url: url != deleted)
    page.locator(".chat.empty #composer-input").wait_for()
    assert page.url == f"{app_server.url}/"
    page.go_back()  # the deleted chat's address is not a dead end either
    page.locator(".chat.empty #composer-input").wait_for()
    assert "404" not in page.title() and page.url == f"{app_server.url}/"


def test_a_toast_never_covers_the_send_button(page, app_server, fake_anthropic):
    sign_up(page, app_server, "toasted")
    _send(page, "Hello")
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    page.locator("article.message.assistant .content.markdown").wait_for()

    # What memory's tools do when Claude saves something: a toast through #toasts.
    page.evaluate(
        """() => htmx.swap("#toasts",
            '<p class="toast">Saved to memory: “a rather long fact about the user’s cat and '
            + 'the name of the cat, which is long”</p>', {swapStyle: "beforeend"})"""
    )
    toast = page.locator(".toast").bounding_box()
    send = page.locator("#composer .send").bounding_box()
    overlaps = not (
        toast["x"] + toast["width"] <= send["x"]
        or send["x"] + send["width"] <= toast["x"]
        or toast["y"] + toast["height"] <= send["y"]
        or send["y"] + send["height"] <= toast["y"]
    )
    assert not overlaps, (toast, send)


def test_titles_show_no_markdown(page, app_server, fake_anthropic):
    sign_up(page, app_server, "marker")
    _send(page, "**Plan** a *ski* trip to `Chamonix`")
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    page.locator("article.message.assistant .content.markdown").wait_for()
    # A title written before titles were made plain is shown plain too.
    app_server.manage(
        "shell",
        "-c",
        "from chat.models import Conversation; "
        "Conversation.objects.create(user_id=Conversation.objects.get(pk="
        f"{_conversation_id(page)}).user_id, title='## Old **bold** title')",
    )
    page.reload()

    assert page.locator("#conversation-title").inner_text() == "Plan a ski trip to Chamonix"
    assert page.title() == "Plan a ski trip to Chamonix · Ikario"
    sidebar = page.locator("#conversation-list").inner_text()
    assert "Plan a ski trip to Chamonix" in sidebar and "Old bold title" in sidebar
    assert "*" not in sidebar and "#" not in sidebar and "`" not in sidebar
