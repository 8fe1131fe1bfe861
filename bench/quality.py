"""Recall quality, each figure beside the previous release's (`make bench-quality`).

    .venv/bin/python bench/quality.py [--parts recall,dedup,contradictions,locomo]
                                      [--save FILE] [--before FILE] [--verbose]

- recall: the auto-recall sets (bench/quality/recall_dev.json, and the held-out slice
  recall_heldout.json, never tuned on). Through the real path: Django on a throwaway
  database, the app's long-lived MCP client and a real ikario_rag subprocess; each
  profile's facts are stored with memory.client.services.add_thought (its noise as auto-saved
  exchanges, kind conversation), each message goes through memory.recall.turn.prepare_turn with
  the default settings in a new conversation (its earlier user messages first), and the
  system prompt's <retrieved_memories> block is read. recall = share of the messages that
  need a fact for which one of them reached the block; false recall = share of the messages
  needing none that got any memory. By the message's language.
- dedup: bench/quality/dedup_dev.json through MCP stdio (add_thought old, then new, same
  kind, own namespace): right = merged exactly when the pair is a restatement; a wrong merge
  = two distinct facts merged.
- contradictions: bench/quality/contradictions_dev.json through MCP stdio: the memory and
  three unrelated ones stored, check_consistency(statement); right = the memory is listed
  among the contradictions exactly when the pair contradicts.
- locomo: bench/locomo_recall.py's hybrid R@5 / R@10 and R@10 per category (LOCOMO_DIR).

The previous release's figures are in bench/quality/before.json (made by running this
script in a checkout of that release with --save).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
DATA = HERE / "quality"
BEFORE = DATA / "before.json"
PARTS = ("recall", "dedup", "contradictions", "locomo")


def _load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


# -- auto-recall through the app ------------------------------------------------------------


def _case_language(message: str, profile: str) -> str:
    from memory.recall.prompts import detect_language

    return detect_language(message) or profile.split("-")[0]


# A crowd of saved exchanges (--crowd N): what a user who has chatted for months has in
# memory besides the profile, so that the facts must be found among many memories.
_TOPICS = (
    "Python decorators",
    "the French Revolution",
    "sourdough starters",
    "budgeting apps",
    "black holes",
    "learning Japanese kanji",
    "SQL joins",
    "houseplants that need little light",
    "the rules of cricket",
    "writing a cover letter",
    "composting at home",
    "electric cars",
    "the Roman Empire",
    "meditation for beginners",
    "Git rebase",
    "watercolour techniques",
    "la Révolution française",
    "les impôts en France",
    "le jardinage sur un balcon",
    "les trous noirs",
    "apprendre le japonais",
    "les bases de données",
    "la photographie",
    "le vélo en ville",
    "les recettes de soupe",
    "la méditation",
    "les voitures électriques",
    "le changement climatique",
    "les échecs",
    "la musique baroque",
    "la randonnée en montagne",
)
_ASKS = (
    "Can you explain {t} simply?",
    "What should I read first about {t}?",
    "Give me three tips about {t}.",
    "Peux-tu m'expliquer {t} ?",
    "Un conseil sur {t} ?",
)
_ANSWERS = (
    "Sure. {T} is easier than it looks: start with the basics, practise a little every day, "
    "and come back with questions.",
    "Bien sûr. Pour {t}, commence par les bases, pratique un peu chaque jour et reviens avec "
    "tes questions.",
)


def _crowd(count: int, seed: int) -> list[dict]:
    import random

    rng = random.Random(seed)
    items = []
    for n in range(count):
        topic = rng.choice(_TOPICS)
        ask = rng.choice(_ASKS).format(t=topic)
        answer = rng.choice(_ANSWERS).format(t=topic, T=topic[:1].upper() + topic[1:])
        items.append(
            {
                "content": f"User: {ask}\nAssistant: {answer} (exchange {n})",
                "context": {
                    "kind": "conversation",
                    "date": f"2025-{n % 12 + 1:02d}-{n % 27 + 1:02d}T09:00:00+00:00",
                    "source": f"conversation:{n}:{n}",
                },
            }
        )
    return items


def _store_profile(user, profile: dict, crowd: int = 0) -> dict[str, str]:
    """The profile's facts and noise in the user's memory; returns {fact content: fact id}."""
    from memory.client import services

    items = _crowd(crowd, seed=len(profile["name"]))
    for start in range(0, len(items), 100):
        services.add_thoughts(user=user, items=items[start : start + 100], timeout=300)
    contents = {}
    for fact in profile["facts"]:
        services.add_thought(
            user=user, content=fact["content"], context={"kind": fact["kind"]}, timeout=120
        )
        contents[fact["content"]] = fact["id"]
    for n, text in enumerate(profile.get("noise", [])):
        services.add_thought(
            user=user,
            content=text,
            context={
                "kind": "conversation",
                "date": f"2026-0{n % 9 + 1}-1{n % 9}T10:00:00+00:00",
                "source": f"conversation:{9000 + n}:{n}",
            },
            timeout=120,
        )
    return contents


async def _run_case(user, case: dict) -> str:
    """The <retrieved_memories> block the message's turn got ("" when none)."""
    from chat.models import Conversation, Message
    from memory.recall.prompts import BLOCK_TAG
    from memory.recall.turn import prepare_turn

    conversation = await Conversation.objects.acreate(user=user, title="bench")
    for earlier in case.get("h", []):
        await Message.objects.acreate(conversation=conversation, role="user", content=earlier)
        await Message.objects.acreate(
            conversation=conversation, role="assistant", content="I see. Tell me more."
        )
    message = await Message.objects.acreate(
        conversation=conversation, role="user", content=case["m"]
    )
    turn = await prepare_turn(user=user, conversation=conversation, user_message=message)
    return next((b for b in turn.system_blocks if b.startswith(f"<{BLOCK_TAG}>")), "")


def _recall_set(name: str, data: dict, users, verbose: bool) -> dict[str, float]:
    from memory.recall.prompts import _one_line

    tallies: dict[str, list[int]] = {}  # key -> [hits, total]
    misses = []
    for profile, user in zip(data["profiles"], users, strict=True):
        facts = {f["id"]: _one_line(f["content"]) for f in profile["facts"]}
        facts.update({f"noise{n}": _one_line(t) for n, t in enumerate(profile.get("noise", []))})
        for case in profile["cases"]:
            block = asyncio.run(_run_case(user, case))
            lines = [line for line in block.splitlines() if line.startswith("- [")]
            got = [fid for fid, text in facts.items() if any(text in line for line in lines)]
            lang = _case_language(case["m"], profile["name"])
            if case["need"]:
                hit = int(bool(set(got) & set(case["need"])))
                keys = (f"{name}.{lang}.recall", f"{name}.all.recall", f"{name}.type.{case['t']}")
                for key in keys:
                    tallies.setdefault(key, [0, 0])
                    tallies[key][0] += hit
                    tallies[key][1] += 1
                if not hit:
                    misses.append(("missed", profile["name"], case["m"], got))
            else:
                wrong = int(bool(lines))
                for key in (f"{name}.{lang}.false_recall", f"{name}.all.false_recall"):
                    tallies.setdefault(key, [0, 0])
                    tallies[key][0] += wrong
                    tallies[key][1] += 1
                if wrong:
                    misses.append(("injected", profile["name"], case["m"], got or [len(lines)]))
    if verbose:
        for what, profile, message, got in misses:
            print(f"  {name} {what}: [{profile}] {message!r} -> {got}")
    figures = {key: round(hits / total, 3) for key, (hits, total) in sorted(tallies.items())}
    for key, (_hits, total) in tallies.items():
        if key.split(".")[2] != "type":
            figures[f"{key}.n"] = total
    return figures


def measure_recall(verbose: bool, crowd: int = 0) -> dict[str, float]:
    from _setup import django_on_temp_db, memory_on, wait_indexed

    index_dir = tempfile.mkdtemp(prefix="ikario-quality-index-")
    django_on_temp_db(
        MCP_MEMORY_ENABLED="true",
        DEBUG="false",
        MCP_CONNECT_TIMEOUT="300",
        MCP_CALL_TIMEOUT="120",
    )
    memory_on(index_dir)
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from memory.client import mcp, services

    # The bench measures the decision, not the deadline of a busy machine.
    settings.MEMORY_RETRIEVAL_TIMEOUT = 60.0
    deadline = time.monotonic() + 300
    mcp.get_client()
    while services.memory_status() != "connected":
        if time.monotonic() > deadline:
            raise SystemExit("ikario_rag did not start")
        time.sleep(0.2)
    figures: dict[str, float] = {}
    sets = (("recall.dev", "recall_dev.json"), ("recall.heldout", "recall_heldout.json"))
    for name, file in sets:
        data = _load(file)
        users = []
        for profile in data["profiles"]:
            user = get_user_model().objects.create_user(f"{name}-{profile['name']}")
            _store_profile(user, profile, crowd)
            users.append(user)
        wait_indexed()  # the vectors are written behind the add
        figures.update(_recall_set(name, data, users, verbose))
    mcp.close_client()
    return figures


# -- dedup, contradictions, LoCoMo through MCP stdio ----------------------------------------


async def _dedup(client, verbose: bool, name: str = "dev") -> dict[str, float]:
    from _stdio import call

    pairs = _load(f"dedup_{name}.json")["pairs"]
    right = wrong_merges = kept_apart = 0
    for n, pair in enumerate(pairs):
        namespace = f"dedup-{name}-{n}"
        context = {"kind": pair.get("kind", "fact")}
        await call(client, "add_thought", content=pair["old"], context=context, namespace=namespace)
        added = await call(
            client, "add_thought", content=pair["new"], context=context, namespace=namespace
        )
        merged = added["status"] in ("updated", "duplicate")
        right += merged == pair["same"]
        wrong_merges += merged and not pair["same"]
        kept_apart += pair["same"] and not merged
        if verbose and merged != pair["same"]:
            what = "merged" if merged else "kept"
            print(f"  dedup {what}: [{pair['cat']}] {pair['old']!r} / {pair['new']!r}")
    prefix = "dedup" if name == "dev" else f"dedup.{name}"
    return {
        f"{prefix}.accuracy": round(right / len(pairs), 3),
        f"{prefix}.wrong_merges": wrong_merges,
        f"{prefix}.restatements_kept_apart": kept_apart,
        f"{prefix}.n": len(pairs),
    }


UNRELATED = (
    "I bought a new kettle last week.",
    "J'ai regardé un documentaire sur les volcans.",
    "The user asked for a packing list for a weekend in the mountains.",
)


async def _contradictions(client, verbose: bool, name: str = "dev") -> dict[str, float]:
    from _stdio import call

    pairs = _load(f"contradictions_{name}.json")["pairs"]
    right = 0
    by_class = {True: [0, 0], False: [0, 0]}
    for n, pair in enumerate(pairs):
        namespace = f"consistency-{name}-{n}"
        for text in UNRELATED:
            await call(client, "add_thought", content=text, namespace=namespace)
        stored = await call(client, "add_thought", content=pair["memory"], namespace=namespace)
        found = await call(
            client, "check_consistency", statement=pair["statement"], namespace=namespace
        )
        flagged = stored["id"] in {c["id"] for c in found["contradictions"]}
        ok = flagged == pair["contradiction"]
        right += ok
        by_class[pair["contradiction"]][0] += ok
        by_class[pair["contradiction"]][1] += 1
        if verbose and not ok:
            what = "flagged" if flagged else "missed"
            print(
                f"  consistency {what}: [{pair['cat']}] {pair['memory']!r} / {pair['statement']!r}"
            )
    prefix = "contradictions" if name == "dev" else f"contradictions.{name}"
    return {
        f"{prefix}.accuracy": round(right / len(pairs), 3),
        f"{prefix}.found": round(by_class[True][0] / by_class[True][1], 3),
        f"{prefix}.non_flagged": round(by_class[False][0] / by_class[False][1], 3),
        f"{prefix}.n": len(pairs),
    }


async def _locomo(client) -> dict[str, float]:
    import locomo_recall

    convs = locomo_recall.load()
    await locomo_recall.store(client, convs)
    figures = await locomo_recall.measure(client, convs, "hybrid")
    return {f"locomo.{key}": value for key, value in figures.items()}


async def measure_mcp(parts: list[str], verbose: bool) -> dict[str, float]:
    from _stdio import memory_server

    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="ikario-quality-") as tmp:
        async with memory_server(Path(tmp)) as client:
            for name in ("dev", "heldout"):
                if "dedup" in parts:
                    figures.update(await _dedup(client, verbose, name))
                if "contradictions" in parts:
                    figures.update(await _contradictions(client, verbose, name))
            if "locomo" in parts:
                figures.update(await _locomo(client))
    return figures


# -- report ---------------------------------------------------------------------------------


def report(figures: dict[str, float], before: dict[str, float]) -> None:
    print(f"\n{'figure':<42}{'before':>10}{'now':>10}")
    for key in sorted(figures):
        was = before.get(key)
        shown = "-" if was is None else f"{was:g}"
        print(f"{key:<42}{shown:>10}{figures[key]:>10g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--save", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--before", type=Path, default=BEFORE)
    parser.add_argument("--verbose", action="store_true", help="list every miss")
    parser.add_argument(
        "--crowd", type=int, default=0, help="saved exchanges stored per user before its facts"
    )
    args = parser.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    figures: dict[str, float] = {}
    if set(parts) & {"dedup", "contradictions", "locomo"}:
        figures.update(asyncio.run(measure_mcp(parts, args.verbose)))
    if "recall" in parts:
        figures.update(measure_recall(args.verbose, args.crowd))
    before = json.loads(args.before.read_text()) if args.before.exists() else {}
    report(figures, before)
    print(f"\n({time.perf_counter() - started:.0f} s)")
    if args.save:
        args.save.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
