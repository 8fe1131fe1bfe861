"""The Content-Security-Policy: the header, and pages that need nothing it forbids."""

import re

import pytest

EXPECTED_POLICY = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self'",
    "font-src": "'self'",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}

# What a policy without 'unsafe-inline' / 'unsafe-eval' refuses to run or apply.
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
INLINE_STYLE = re.compile(r"<style\b|\sstyle\s*=", re.IGNORECASE)
EVENT_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.IGNORECASE)
HTMX_EVAL = re.compile(r"\shx-on[:-]|\shx-vals\s*=\s*['\"]\s*js:|\shx-vars\s*=", re.IGNORECASE)


def _policy(response) -> dict[str, str]:
    directives = (d.strip() for d in response["Content-Security-Policy"].split(";"))
    return dict(d.split(" ", 1) for d in directives if d)


def test_it_allows_only_this_sites_scripts_styles_images_and_connections(client):
    response = client.get("/accounts/login/")
    assert _policy(response) == EXPECTED_POLICY


def test_it_sends_the_policy_on_every_page_and_error(alice_client, settings):
    settings.MCP_MEMORY_ENABLED = False
    for url in ("/", "/settings/", "/no/such/page/", "/api/conversations"):
        assert _policy(alice_client.get(url)) == EXPECTED_POLICY, url


def test_it_turns_off_the_styles_htmx_would_inject_or_copy(client):
    page = client.get("/accounts/login/").content.decode()
    config = (
        """'{"includeIndicatorStyles": false, "allowEval": false, """
        """"attributesToSettle": ["class", "width", "height"]}'"""
    )
    assert f'<meta name="htmx-config" content={config}>' in page


def _forbidden(page: str) -> list[str]:
    found = []
    for pattern in (INLINE_SCRIPT, INLINE_STYLE, EVENT_HANDLER, HTMX_EVAL):
        found += [m.group(0) for m in pattern.finditer(page)]
    return found


@pytest.mark.parametrize(
    "url", ["/accounts/login/", "/accounts/signup/", "/", "/settings/", "/no/such/page/"]
)
def test_its_pages_need_no_inline_script_or_style(alice_client, settings, url):
    settings.MCP_MEMORY_ENABLED = False
    if url.startswith("/accounts/"):
        alice_client.logout()
    assert _forbidden(alice_client.get(url).content.decode()) == []


def test_its_conversation_page_needs_no_inline_script_or_style(alice_client, alice, settings):
    from chat.models import Conversation, Message

    settings.MCP_MEMORY_ENABLED = False
    conversation = Conversation.objects.create(user=alice, title="Charts")
    Message.objects.create(conversation=conversation, role="user", content="Show me")
    Message.objects.create(
        conversation=conversation,
        role="assistant",
        content="Here: ![chart](https://evil.example/c.png) and **bold** `code`.",
    )
    page = alice_client.get(f"/c/{conversation.pk}/").content.decode()
    assert _forbidden(page) == []
    assert "https://evil.example/c.png" in page and '<img src="https://' not in page


def test_it_needs_no_inline_script_or_style_on_the_memory_settings_page(alice_client, settings):
    settings.MCP_MEMORY_ENABLED = False
    assert _forbidden(alice_client.get("/memory/settings/").content.decode()) == []
