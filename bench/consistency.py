"""The consistency check on its development set (issue 23), offline and with a judge.

    .venv/bin/python bench/consistency.py [--sets dev,heldout] [--verbose] [--root CHECKOUT]
        [--no-model]

bench/quality/consistency_dev.json: 120 labelled pairs, English and French (jobs, places,
numbers, diets, allergies against likings, additions, negations, opposites, ended
habits, days, agreements, unrelated pairs); the rules were written looking at it.
bench/quality/consistency_heldout.json: 40 more, written after the rules, never tuned on.

For each pair a namespace of its own holds three unrelated memories and the pair's
`memory` (through MCP stdio, a real ikario_rag server), then check_consistency(`statement`)
is called. The pair's memory is then:

- flagged: listed among the contradictions;
- unknown: listed as `undetermined` (the rules cannot tell);
- not flagged: listed as supporting, or not listed (compatible, unrelated).

Figures (the question is "does the statement contradict this memory?"):
- accuracy: right confident answers / all pairs (an unknown counts as not right);
- coverage: pairs answered with confidence (not unknown) / all pairs;
- precision: right / confident answers;
- found: contradictions flagged / contradictions; false alarms: flagged / the others;
- statement verdict: the check's overall `verdict` is "contradicted" exactly for the
  contradicting pairs (an "unknown" verdict, also one caused by an unrelated memory,
  counts as not right).

With a judge (unless --no-model): the same server answers are passed through the web
app's memory/client/judge.py with the real `anthropic` SDK against tests/fixtures/fake_anthropic.py,
whose scripted judge answers each pair from the set's label (and "unrelated" for the
unrelated memories). That figure measures the PIPELINE (which pairs the rules surface to
the model, the request, the strict answer's parsing, the lists and verdict rebuilt), with
a judge that is always right: an upper bound, not a real model's quality.

--root runs the server of another checkout (e.g. the previous release, for a "before").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))
DATA = HERE / "quality"

UNRELATED = (
    "I bought a new kettle last week.",
    "J'ai regardé un documentaire sur les volcans.",
    "The user asked for a packing list for a weekend in the mountains.",
)
# The scripted judge's answer for each label.
ANSWER = {"contradiction": "contradicts", "consistent": "consistent", "unrelated": "unrelated"}


def outcome(result: dict, memory_id: str) -> str:
    """What the check says of the pair's memory: flagged, unknown or not_flagged."""
    if memory_id in {f["id"] for f in result.get("contradictions") or []}:
        return "flagged"
    if memory_id in {f["id"] for f in result.get("undetermined") or []}:
        return "unknown"
    return "not_flagged"


async def run_server(root: Path, name: str) -> list[dict]:
    """Each pair stored and checked; the server's answer and the memory's id."""
    from _stdio import call, memory_server

    pairs = json.loads((DATA / f"consistency_{name}.json").read_text())["pairs"]
    out = []
    with tempfile.TemporaryDirectory(prefix="ikario-consistency-") as tmp:
        async with memory_server(Path(tmp), root) as client:
            for n, pair in enumerate(pairs):
                namespace = f"consistency-{n}"
                for text in UNRELATED:
                    await call(client, "add_thought", content=text, namespace=namespace)
                stored = await call(
                    client, "add_thought", content=pair["memory"], namespace=namespace
                )
                result = await call(
                    client, "check_consistency", statement=pair["statement"], namespace=namespace
                )
                out.append({**pair, "id": stored["id"], "result": result})
    return out


def score(rows: list[dict], key: str, verbose: bool, title: str) -> dict:
    """The figures of one run (`key`: which result of each row to read)."""
    n = len(rows)
    right = confident = found = flagged_wrongly = verdict_right = 0
    contradictions = sum(r["label"] == "contradiction" for r in rows)
    by = defaultdict(lambda: [0, 0, 0])  # right, unknown, n
    for row in rows:
        result = row[key]
        said = outcome(result, row["id"])
        truth = row["label"] == "contradiction"
        ok = said != "unknown" and (said == "flagged") == truth
        right += ok
        confident += said != "unknown"
        found += truth and said == "flagged"
        flagged_wrongly += (not truth) and said == "flagged"
        verdict_right += (result.get("verdict") == "contradicted") == truth and result.get(
            "verdict", "x"
        ) != "unknown"
        for group in (f"lang {row['lang']}", f"cat {row['cat']}", f"label {row['label']}"):
            by[group][0] += ok
            by[group][1] += said == "unknown"
            by[group][2] += 1
        if verbose and not ok:
            reason = next(
                (
                    f.get("reason", "")
                    for name in ("contradictions", "undetermined", "supporting")
                    for f in result.get(name) or []
                    if f["id"] == row["id"]
                ),
                "",
            )
            print(
                f"  {title} {said:<11} [{row['label']}/{row['cat']}] {row['memory']!r} / "
                f"{row['statement']!r} {reason}"
            )
    figures = {
        "n": n,
        "accuracy": round(right / n, 3),
        "coverage": round(confident / n, 3),
        "precision": round(right / confident, 3) if confident else None,
        "found": round(found / contradictions, 3),
        "false_alarms": round(flagged_wrongly / (n - contradictions), 3),
        "statement_verdict": round(verdict_right / n, 3),
    }
    for group, (ok, unknown, count) in sorted(by.items()):
        figures[f"{group}: right / unknown / n"] = f"{ok} / {unknown} / {count}"
    return figures


def with_judge(rows: list[dict]) -> None:
    """Each server answer through memory/client/judge.py, the scripted judge answering from
    labels."""
    import anthropic
    import django
    from django.conf import settings

    if not settings.configured:
        settings.configure(ANTHROPIC_EXTRACTION_MODEL="claude-haiku-5-5")
        django.setup()
    from memory.client import judge
    from tests.fixtures.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

    labels = {(r["statement"], r["memory"]): r["label"] for r in rows}

    def scripted(body: dict) -> Reply:
        content = body["messages"][0]["content"]
        statement = re.search(r"^Statement \(said by the user\): (.*)$", content, re.M).group(1)
        verdicts = []
        for pair, memory in re.findall(r"^(P\d+): (.*)$", content, re.M):
            label = labels.get((statement, memory), "unrelated")
            verdicts.append({"pair": pair, "verdict": ANSWER[label], "reason": label})
        return Reply([ToolUseBlock(judge.TOOL_NAME, {"verdicts": verdicts})], "tool_use")

    with FakeAnthropic() as fake:
        fake.respond_with(scripted)
        client = anthropic.Anthropic(api_key="fake", base_url=fake.base_url, max_retries=0)
        for row in rows:
            row["judged"] = judge.judged(row["statement"], row["result"], using=client)
        asked = len(fake.requests)
    print(f"(the judge was asked {asked} times for {len(rows)} statements)")


def show(title: str, figures: dict) -> None:
    print(f"\n{title}")
    for key, value in figures.items():
        print(f"  {key:<44}{value}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="dev,heldout", help="dev, heldout or both")
    parser.add_argument("--root", type=Path, default=ROOT, help="the server's checkout")
    parser.add_argument("--no-model", action="store_true", help="offline figures only")
    parser.add_argument("--verbose", action="store_true", help="list every pair not right")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    for name in [n for n in args.sets.split(",") if n]:
        print(f"\n== {name} ==")
        rows = asyncio.run(run_server(args.root.resolve(), name))
        show(f"{name}, offline (the rules)", score(rows, "result", args.verbose, "offline"))
        if not args.no_model:
            with_judge(rows)
            show(
                f"{name}, with the scripted judge (the pipeline, not a model's quality)",
                score(rows, "judged", args.verbose, "judged"),
            )
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
