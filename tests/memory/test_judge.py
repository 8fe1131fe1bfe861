"""The consistency check with a key: the pairs ikario_rag's rules surface are judged by the
small model (the real `anthropic` SDK against the fake Messages API, the real ikario_rag),
and the rules' verdict stands when the model fails. Offline, "unknown" stays unknown."""

from __future__ import annotations

import threading

import pytest

from memory.client import judge, services
from tests.fixtures.fake_anthropic import Reply, ToolUseBlock

pytestmark = pytest.mark.django_db(transaction=True)

MEMORY = "Léa never drinks coffee."
STATEMENT = "Léa drinks green tea."


def _verdicts(*items):
    return {"verdicts": [{"pair": p, "verdict": v, "reason": r} for p, v, r in items]}


@pytest.fixture
def lea(memory_server, alice):
    services.add_thought(user=alice, content=MEMORY, context={"kind": "fact"})
    return alice


def test_offline_the_rules_say_unknown_and_no_model_is_asked(lea, settings):
    settings.ANTHROPIC_API_KEY = ""

    result = services.check_consistency(user=lea, statement=STATEMENT)

    assert result["verdict"] == "unknown" and result["consistency_score"] == 0.5
    assert [f["content"] for f in result["undetermined"]] == [MEMORY]
    assert result["judged_by"] == "rules" and "judge_error" not in result


def test_with_a_key_the_model_judges_the_pairs_the_rules_cannot(lea, fake_anthropic, settings):
    fake_anthropic.tool_use("judge_pairs", _verdicts(("P1", "consistent", "tea is not coffee")))

    result = services.check_consistency(user=lea, statement=STATEMENT)

    sent = fake_anthropic.last_request
    assert sent["model"] == settings.ANTHROPIC_EXTRACTION_MODEL
    assert sent["tool_choice"] == {"type": "tool", "name": "judge_pairs"}
    assert f"Statement (said by the user): {STATEMENT}" in sent["messages"][0]["content"]
    assert f"The user's name: {lea.get_username()}" in sent["messages"][0]["content"]
    assert f"P1: {MEMORY}" in sent["messages"][0]["content"]
    assert result["judged_by"] == "model"
    assert result["verdict"] == "supported" and result["consistency_score"] == 1.0
    assert [(f["content"], f["reason"]) for f in result["supporting"]] == [
        (MEMORY, "tea is not coffee")
    ]
    assert result["undetermined"] == result["contradictions"] == []


def test_a_private_span_of_the_statement_never_reaches_the_model(lea, fake_anthropic):
    fake_anthropic.tool_use("judge_pairs", _verdicts(("P1", "unsure", "?")))

    services.check_consistency(
        user=lea, statement="Léa drinks green tea <private>code 4417</private> daily."
    )

    sent = fake_anthropic.last_request["messages"][0]["content"]
    assert "4417" not in sent and "private" not in sent and "green tea" in sent


def test_a_contradiction_the_model_finds_lowers_the_score(memory_server, alice, fake_anthropic):
    services.add_thought(user=alice, content="Noé travaille de nuit à l'hôpital.")
    fake_anthropic.tool_use(
        "judge_pairs", _verdicts(("P1", "contradicts", "il ne peut pas dormir la nuit"))
    )

    result = services.check_consistency(user=alice, statement="Noé dort toutes les nuits.")

    assert result["judged_by"] == "model"
    assert [f["content"] for f in result["contradictions"]] == [
        "Noé travaille de nuit à l'hôpital."
    ]
    assert result["verdict"] == "contradicted" and result["consistency_score"] <= 0.5


def test_unrelated_pairs_leave_the_lists(lea, fake_anthropic):
    fake_anthropic.tool_use("judge_pairs", _verdicts(("P1", "unrelated", "another drink")))

    result = services.check_consistency(user=lea, statement=STATEMENT)

    assert result["contradictions"] == result["supporting"] == result["undetermined"] == []
    assert result["verdict"] == "no_conflict"


@pytest.mark.parametrize(
    "answer",
    [
        _verdicts(("P1", "maybe", "not in the list")),
        _verdicts(("P7", "consistent", "no such pair")),
        _verdicts(("P1", "consistent", "once"), ("P1", "contradicts", "twice")),
        {"something": "else"},
    ],
)
def test_an_answer_outside_the_schema_keeps_the_rules_verdict(lea, fake_anthropic, answer):
    fake_anthropic.script(Reply([ToolUseBlock("judge_pairs", answer)], stop_reason="tool_use"))

    result = services.check_consistency(user=lea, statement=STATEMENT)

    assert result["judged_by"] == "rules" and result["judge_error"].startswith("bad answer")
    assert result["verdict"] == "unknown"
    assert [f["content"] for f in result["undetermined"]] == [MEMORY]


def test_an_api_error_keeps_the_rules_verdict(lea, fake_anthropic):
    fake_anthropic.fail(status=500, times=3)

    result = services.check_consistency(user=lea, statement=STATEMENT)

    assert result["judged_by"] == "rules" and result["judge_error"].startswith("api error")
    assert result["verdict"] == "unknown"


def test_no_answer_in_time_keeps_the_rules_verdict(lea, fake_anthropic, settings):
    settings.MEMORY_CONSISTENCY_TIMEOUT = 0.2
    answered = threading.Event()

    def slow(body):
        answered.wait(5)  # longer than the timeout: the SDK gives up first
        return Reply([ToolUseBlock("judge_pairs", _verdicts(("P1", "consistent", "late")))])

    fake_anthropic.respond_with(slow)
    try:
        result = services.check_consistency(user=lea, statement=STATEMENT)
    finally:
        answered.set()

    assert result["judged_by"] == "rules" and result["judge_error"] == "timeout"
    assert result["verdict"] == "unknown"


def test_nothing_to_judge_asks_no_model(memory_server, alice, fake_anthropic):
    services.add_thought(user=alice, content="I bought a new kettle last week.")

    result = services.check_consistency(user=alice, statement="Le train pour Nantes part à 8 h.")

    assert fake_anthropic.requests == []
    assert result["verdict"] == "no_conflict" and result["judged_by"] == "rules"


def test_the_api_returns_the_new_fields(lea, alice_client, fake_anthropic):
    fake_anthropic.tool_use("judge_pairs", _verdicts(("P1", "unsure", "cannot tell")))

    response = alice_client.post(
        "/api/memory/consistency", {"statement": STATEMENT}, content_type="application/json"
    )

    body = response.json()
    assert response.status_code == 200
    assert body["verdict"] == "unknown" and body["judged_by"] == "model"
    assert [f["reason"] for f in body["undetermined"]] == ["cannot tell"]
    assert {"consistency_score", "contradictions", "supporting"} <= set(body)


def test_at_most_max_pairs_are_shown_to_the_model():
    result = {
        "undetermined": [{"id": f"m{n}", "content": f"memory {n}"} for n in range(12)],
    }

    pairs = judge.pairs_of(result)

    assert len(pairs) == judge.MAX_PAIRS
    assert [p["finding"]["id"] for p in pairs][:2] == ["m0", "m1"]
