"""One rule of "the same fact" (ikario_rag/facts.py's compare): extraction's echo filter
(memory/learning/echo.py), memory health (memory/learning/health.py) and the memory
server's dedup (ikario_rag/adding.py) agree on corrections and restatements."""

from __future__ import annotations

import pytest

from ikario_rag.adding import dedup_similarity
from ikario_rag.facts import Relation, Statement, compare
from memory.learning import echo, health

# (recalled or stored, said later, what the later one is to the earlier)
PAIRS = [
    ("The user eats meat", "The user no longer eats meat", Relation.NEGATES),
    ("L'utilisateur mange de la viande", "L'utilisateur ne mange plus de viande", Relation.NEGATES),
    ("The user smokes", "The user stopped smoking", Relation.NEGATES),
    ("The user has 2 children", "The user has 3 children", Relation.CHANGES_NUMBER),
    ("The user's sister is called Emma", "The user's sister is called Léa", Relation.CHANGES_NAME),
    ("The user lives in Lyon", "The user lives in Porto", Relation.CHANGES_NAME),
    ("The user runs every Tuesday", "The user runs every Friday", Relation.CHANGES_DATE),
    ("Alice is allergic to peanuts", "The user is allergic to peanuts", Relation.SAME),
    ("Ma sœur habite à Lyon", "Ma soeur habite à Lyon", Relation.SAME),
    ("The user is a nurse in Nantes", "The user is a night nurse in Nantes", Relation.RESTATES),
    ("The user likes jazz", "The user likes rain", Relation.OTHER),
]


@pytest.mark.parametrize(("earlier", "later", "relation"), PAIRS)
def test_echo_filter_health_and_dedup_follow_one_comparison(earlier, later, relation):
    assert compare(later, earlier) is relation
    # The echo filter drops only what says nothing new: never a correction.
    assert echo.echoes(later, [Statement(earlier)]) is (relation is Relation.SAME)
    # Health calls duplicates what dedup merges (at a cosine that confirms any pair).
    same = relation.same_fact
    assert health.same_fact(Statement(later), Statement(earlier)) is same
    assert (dedup_similarity(0.99, later, earlier) > 0) is same


def test_a_restatement_is_one_fact_both_ways_and_the_cosine_still_decides_dedup():
    short, detailed = "The user adopted a cat", "The user adopted a ginger cat in March"
    assert compare(detailed, short) is Relation.RESTATES
    assert compare(short, detailed) is Relation.SAME
    assert dedup_similarity(0.5, detailed, short) == 0.0  # too far apart by their vectors
