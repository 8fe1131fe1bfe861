"""A memory card as the memory page draws it (memory/display/cards.py, the page's `card`
fragment)."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string
from django.utils import translation

from memory.display import cards


def _record(**meta) -> dict:
    return {
        "id": "m1",
        "content": "The user is in Lyon until Friday.",
        "metadata": {"kind": "fact", "category": "contextuelle", **meta},
    }


@pytest.mark.parametrize(
    ("lang", "said"), [("en", "until 12 Dec"), ("fr", "jusqu’au 12 déc.")], ids=["en", "fr"]
)
def test_it_shows_when_a_passing_state_ends(lang, said):
    record = _record(expires_at="2026-12-12T12:00:00+00:00")
    with translation.override(lang):
        html = render_to_string("memory/page.html#card", {"m": cards.card(record)})
    assert said in html


def test_a_lasting_memory_has_no_end():
    html = render_to_string("memory/page.html#card", {"m": cards.card(_record())})
    assert "memory-expires" not in html
