"""Time kept (memory/learning/person/when.py): the dates a fact names, read against the
message's date by dateparser, and what they make of the fact's date and life."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.learning.person.when import named_in, timed

SAID = datetime(2026, 11, 28, 15, 30, tzinfo=UTC)  # a Saturday


@pytest.mark.parametrize(
    ("content", "field", "day"),
    [
        ("The user leaves for Peru on 12 May for three weeks", "on", "2027-05-12"),
        ("The user starts a new job next Monday", "on", "2026-11-30"),
        ("L'utilisateur part au Japon le 3 mars", "on", "2027-03-03"),
        ("The user flies to Peru in May", "on", "2027-05-01"),
        ("The user is on sick leave until the end of February", "until", "2027-02-28"),
        ("L'utilisateur est en arrêt jusqu'à fin février", "until", "2027-02-28"),
        ("The user is in Lyon until Friday", "until", "2026-12-04"),
        ("L'utilisateur travaille chez Renault depuis 2019", "since", "2019-01-01"),
        ("The user has been gluten-free since March 2020", "since", "2020-03-01"),
    ],
)
def test_it_reads_the_dates_a_fact_names_against_the_message(content, field, day):
    assert getattr(named_in(content, SAID), field).date().isoformat() == day


def test_may_the_verb_is_no_month():
    assert named_in("The user may move abroad", SAID).on is None


def test_a_plan_is_dated_when_it_happens_and_never_expires_before():
    item = {"content": "The user leaves for Peru on 12 May for three weeks"}
    item["context"] = {"kind": "goal", "date": "2026-11-28", "ttl": "21d"}

    context = timed(item, SAID, now=SAID)["context"]

    assert context["date"].startswith("2027-05-12") and "ttl" not in context
    assert "planned" in context["tags"]


def test_a_fact_naming_no_date_is_dated_by_its_message_not_midnight():
    item = {"content": "The user lives in Porto", "context": {"date": "2026-11-28"}}

    assert timed(item, SAID, now=SAID)["context"]["date"] == SAID.isoformat()


def test_a_state_expires_at_the_end_it_names():
    item = {"content": "The user is on sick leave until the end of February"}
    item["context"] = {"kind": "fact", "ttl": "7d"}

    assert timed(item, SAID, now=SAID)["context"]["ttl"] == f"{92 * 24 + 9}h"  # 28 Feb, 23:59
