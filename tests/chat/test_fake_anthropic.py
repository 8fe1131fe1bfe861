"""The fake Messages API, driven through the real `anthropic` SDK: what other tests stand on."""

import anthropic
import pytest


def _client(fake):
    return anthropic.Anthropic(api_key="sk-test", base_url=fake.base_url, max_retries=0)


def test_it_streams_text_in_pieces(fake_anthropic):
    fake_anthropic.reply("Hello there, friend.")
    with _client(fake_anthropic).messages.stream(
        model="claude-test", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert pieces == ["Hello ", "there, ", "friend."]
    assert final.content[0].text == "Hello there, friend."
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == 3
    assert fake_anthropic.requests[0]["messages"] == [{"role": "user", "content": "hi"}]
    assert fake_anthropic.requests[0]["stream"] is True


def test_it_streams_tool_use_with_input_json_deltas(fake_anthropic):
    fake_anthropic.tool_use(
        "search_memories", {"query": "ski trip", "n_results": 3}, text="Let me look."
    )
    with _client(fake_anthropic).messages.stream(
        model="claude-test", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        kinds = {event.type for event in stream}
        final = stream.get_final_message()
    assert "input_json" in kinds
    assert final.stop_reason == "tool_use"
    text, tool = final.content
    assert text.text == "Let me look."
    assert (tool.type, tool.name, tool.input) == (
        "tool_use",
        "search_memories",
        {"query": "ski trip", "n_results": 3},
    )
    assert tool.id.startswith("toolu_")


def test_it_answers_without_streaming(fake_anthropic):
    fake_anthropic.reply("Plain JSON.")
    message = _client(fake_anthropic).messages.create(
        model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.content[0].text == "Plain JSON."
    assert message.model == "claude-test"


def test_it_uses_the_default_reply_when_nothing_is_scripted(fake_anthropic):
    message = _client(fake_anthropic).messages.create(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.content[0].text == "Hello from the fake Claude."


def test_it_returns_api_errors(fake_anthropic):
    fake_anthropic.fail(529, "overloaded_error", "Overloaded")
    with pytest.raises(anthropic.APIStatusError) as caught:
        _client(fake_anthropic).messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.status_code == 529
    assert "Overloaded" in str(caught.value)


def test_it_sends_an_error_event_mid_stream(fake_anthropic):
    fake_anthropic.fail_midstream("Half an ans", "overloaded_error", "Overloaded")
    seen = []
    with (
        pytest.raises(anthropic.APIStatusError),
        _client(fake_anthropic).messages.stream(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        ) as stream,
    ):
        for text in stream.text_stream:
            seen.append(text)
    assert "".join(seen) == "Half an ans"


def test_it_outlasts_sdk_retries_when_asked(fake_anthropic):
    fake_anthropic.fail(500, times=2)
    fake_anthropic.reply("Third time lucky.")
    client = anthropic.Anthropic(api_key="k", base_url=fake_anthropic.base_url, max_retries=2)
    message = client.messages.create(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.content[0].text == "Third time lucky."
    assert len(fake_anthropic.requests) == 3


def test_it_points_the_app_settings_at_itself(fake_anthropic, settings):
    assert fake_anthropic.base_url == settings.ANTHROPIC_BASE_URL
    assert settings.ANTHROPIC_API_KEY


def test_a_paced_reply_streams_the_scripted_events(fake_anthropic):
    from tests.fixtures.fake_anthropic import TextBlock, ToolUseBlock, paced

    fake_anthropic.script(
        paced(
            [TextBlock("Let me look."), ToolUseBlock("search_memories", {"query": "ski"})],
            first_token=0.01,
            tokens_per_second=1000,
        )
    )
    fake_anthropic.script(
        paced([TextBlock("Found it, you ski.")], first_token=0.01, tokens_per_second=1000)
    )
    client = _client(fake_anthropic)
    said = [{"role": "user", "content": "hi"}]
    with client.messages.stream(model="m", max_tokens=100, messages=said) as stream:
        first = stream.get_final_message()
    with client.messages.stream(model="m", max_tokens=100, messages=said) as stream:
        pieces = list(stream.text_stream)
        second = stream.get_final_message()
    assert first.stop_reason == "tool_use"
    assert [b.type for b in first.content] == ["text", "tool_use"]
    assert first.content[1].input == {"query": "ski"}
    assert pieces == ["Found ", "it, ", "you ", "ski."]
    assert second.stop_reason == "end_turn"


def test_a_paced_reply_not_streamed_comes_whole_after_its_generation_time(fake_anthropic):
    from tests.fixtures.fake_anthropic import TextBlock, generation_seconds, paced

    reply = paced([TextBlock("one two three four")], first_token=0.01, tokens_per_second=400)
    assert generation_seconds(reply) == pytest.approx(0.01 + 4 / 400)
    fake_anthropic.script(reply)
    message = _client(fake_anthropic).messages.create(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.content[0].text == "one two three four"
    assert message.usage.output_tokens == 4
