"""Claude using its memory, seen in a real browser: the inline tool-use line shows up while
the answer is still streaming, collapsed, and stays with the saved conversation.

Headless Chromium against Daphne with the memory on (the real ikario_rag subprocess);
Claude = the fake Messages API, scripted to call search_memories, then to stream an answer
it holds open until the test releases it.
"""

import json
import re

import pytest

from tests.fixtures.browser import sign_up, wait_for_memory

pytestmark = pytest.mark.browser

# Notes, for every tool line that appears, whether the answer was still streaming then.
RECORD_TOOL_LINES = """
window.__toolLines = [];
new MutationObserver(() => {
  for (const el of document.querySelectorAll('details.tool-call summary')) {
    const text = el.textContent.trim();
    if (window.__toolLines.some(t => t.text === text)) continue;
    const stream = document.querySelector('.content.streaming');
    window.__toolLines.push({
      text, streaming: !!stream, answerSoFar: stream ? stream.textContent : null,
      open: el.parentElement.open,
    });
  }
}).observe(document, {subtree: true, childList: true, characterData: true});
"""

ANSWER = (
    "You went skiing in Chamonix in January with Marc, and you loved the long red runs "
    "above Argentière."
)


def _save_memory(page, server, content):
    csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    response = page.request.post(
        f"{server.url}/api/memory/add",
        data=json.dumps({"content": content, "context": {"category": "contextuelle"}}),
        headers={"Content-Type": "application/json", "X-CSRFToken": csrf},
    )
    assert response.status == 201, response.text()


def test_it_shows_the_tool_use_inline_while_the_reply_streams(
    page, app_server_with_memory, fake_anthropic
):
    server = app_server_with_memory
    page.add_init_script(RECORD_TOOL_LINES)
    sign_up(page, server, "memory-skier")
    wait_for_memory(page, server)
    _save_memory(page, server, "Alice went skiing in Chamonix with Marc in January")

    fake_anthropic.tool_use("search_memories", {"query": "ski trip"}, text="Let me check.")
    # The answer streams two pieces, then waits until the test releases it.
    fake_anthropic.reply(ANSWER, hold=True)
    page.fill("#composer-input", "What do you remember about my ski trip?")
    page.press("#composer-input", "Enter")
    page.wait_for_url(re.compile(r"/c/\d+/$"))

    line = page.locator("details.tool-call summary", has_text="Searched memories for 'ski trip'")
    line.wait_for()
    assert page.locator(".content.streaming").count() == 1  # the answer is not done yet
    fake_anthropic.release()
    page.locator("article.message.assistant .content.markdown").wait_for()

    seen = page.evaluate("window.__toolLines")
    final = [s for s in seen if s["text"] == "Searched memories for 'ski trip' — 1 result"]
    assert final, seen
    assert final[0]["streaming"] is True
    assert "red runs" not in final[0]["answerSoFar"]  # shown before the answer's end
    assert final[0]["open"] is False  # collapsed by default

    answer = page.locator("article.message.assistant .content.markdown").inner_text()
    assert "long red runs" in answer
    # The tool's result is inside the collapsed line, from the real memory server.
    details = page.locator("details.tool-call").first
    details.locator("summary").click()
    assert "Chamonix with Marc" in details.locator(".tool-detail").inner_text()

    # The saved conversation keeps the tool use.
    page.reload()
    kept = page.locator("article.message.assistant details.tool-call summary")
    assert kept.inner_text() == "Searched memories for 'ski trip' — 1 result"
    assert page.locator("article.message.assistant details.tool-call[open]").count() == 0

    # What the SDK sent: the tool result came from the real search.
    tool_result = fake_anthropic.requests[1]["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["is_error"] is False
    assert "Chamonix with Marc" in json.dumps(tool_result["content"])
