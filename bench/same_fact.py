"""The one rule of "the same fact" without vectors, as memory health and the echo filter use
it (ikario_rag/facts.py's compare), on the dedup pairs (bench/quality/dedup_*.json):

    PYTHONPATH=. .venv/bin/python bench/same_fact.py

right = called one fact exactly when the pair is a restatement; a wrong merge = two
distinct facts called one (health would offer to delete one of them).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from memory.learning import health  # noqa: E402

DATA = Path(__file__).resolve().parent / "quality"

for name in ("dedup_dev", "dedup_heldout"):
    pairs = json.loads((DATA / f"{name}.json").read_text())["pairs"]
    right = wrong_merges = kept_apart = 0
    for pair in pairs:
        same = health.same_fact(health.Statement(pair["new"]), health.Statement(pair["old"]))
        if same == pair["same"]:
            right += 1
        elif same:
            wrong_merges += 1
        else:
            kept_apart += 1
    print(
        f"{name}: right {right}/{len(pairs)}, wrong merges {wrong_merges}, "
        f"restatements kept apart {kept_apart}"
    )
