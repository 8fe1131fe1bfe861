"""Why a needed fact is not recalled in a new chat (a diagnosis, not the benchmark).

    .venv/bin/python bench/_recall_misses.py [--set FILE] [--who model|rules] [--all]

In process, no Django: every statement of the learning set is stored in a throwaway
ikario_rag index as a fact (the scripted model's fact: the statement as said, its keys as
subjects; or the rules' facts, memory/learning/offline_facts.py), then each chat's question is
searched as auto-recall searches it (knowledge kinds, hybrid, 40 candidates). Prints, per
chat whose fact does not reach the 0.5 bar: the fact, its rank and relevance, its
features, and what scored above it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from ikario_rag import contract, relevance, search  # noqa: E402
from ikario_rag.memory import Memory  # noqa: E402
from ikario_rag.validate import new_memory  # noqa: E402
from memory.learning.offline_facts import as_item, facts_in, fold  # noqa: E402

KNOWLEDGE = search.Filters(kinds=[k for k in contract.KINDS if k != "conversation"])


def stored_items(data: dict, who: str) -> list[dict]:
    items = []
    for s in data["statements"]:
        if who == "model":
            subjects = [k.lower() for k in s["keys"]][:4]
            context = {"kind": s["kind"], "subjects": subjects}
            items.append({"content": s["text"], "context": context})
        else:
            for found in facts_in(s["text"]):
                item = as_item(found)
                item["context"].pop("ttl", None)
                items.append(item)
    return items


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", type=Path, default=HERE / "quality" / "learning_dev.json")
    parser.add_argument("--who", default="model", choices=("model", "rules"))
    parser.add_argument("--candidates", type=int, default=40, help="RECALL_CANDIDATES")
    parser.add_argument("--all", action="store_true", help="every chat, not only the misses")
    args = parser.parse_args()
    data = json.loads(args.set.read_text())
    memory = Memory(Path(tempfile.mkdtemp(prefix="ikario-misses-")))
    memory.embedder.wait()
    memory.repaired.set()
    items = [
        new_memory(i["content"], {**i["context"], "dedup": False})
        for i in stored_items(data, args.who)
    ]
    memory.add("u", items)
    memory.settle("u")
    hits = 0
    for chat in data["chats"]:
        found = search.search(memory, "u", chat["question"], args.candidates, KNOWLEDGE, "hybrid")[
            "results"
        ]
        keys = [fold(k) for k in chat["keys"]]
        want = [n for n, r in enumerate(found) if all(k in fold(r["content"]) for k in keys)]
        ok = any(found[n]["relevance_score"] >= 0.5 for n in want)
        hits += ok
        if ok and not args.all:
            continue
        print(f"\n{'OK ' if ok else 'MISS'} {chat['question']!r}  (needs {chat['said']!r})")
        asked = relevance.read_query(chat["question"])
        print(f"   query terms {sorted(asked.terms)}, domains {sorted(asked.domains)}")
        if not want:
            print(f"   the fact is not among the {args.candidates} candidates")
        for n, r in enumerate(found[:6]):
            mark = "->" if n in want else "  "
            print(f"   {mark} #{n + 1} {r['relevance_score']:.3f} {r['content'][:80]!r}")
    print(f"\nrecalled (>= 0.5, among {args.candidates}): {hits}/{len(data['chats'])}")
    memory.close()


if __name__ == "__main__":
    main()
