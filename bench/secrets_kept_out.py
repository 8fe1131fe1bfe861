"""Secrets kept out of memory, look-alikes kept (issue 33, finding 4).

Every sentence of the sets in bench/quality/secrets_*.json goes through the real memory
server's add path (ikario_rag over streamable HTTP, `services.add_thoughts` as every writer
of the web app calls it, on a throwaway index), then is read back (list_memories): a
secret is "stored" when its value (spaces aside) is still in the record; a look-alike is
"changed" when its record is not word for word what was said.

The sets: `dev` (written with the rule, 63 secrets / 106 look-alikes), `heldout` (written
after it; the rule was then improved on its misses, so it is no longer held out: its first
figure is in docs/BENCHMARKS.md), `fresh` (written after that last change, never tuned on).

Usage: .venv/bin/python bench/secrets_kept_out.py (make bench-secrets)
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from _setup import ROOT, django_on_temp_db, shared_memory_server

SETS = ("dev", "heldout", "fresh")


def _load(name: str) -> dict:
    return json.loads((ROOT / "bench" / "quality" / f"secrets_{name}.json").read_text())


def _stored(held: str, value: str) -> bool:
    return value in held or value.replace(" ", "") in held.replace(" ", "")


def run(name: str, user) -> dict:
    from memory.client import services

    data = _load(name)
    said = [c["text"] for c in data["secrets"]] + list(data["lookalikes"])
    started = time.perf_counter()
    ids: list[str] = []
    for start in range(0, len(said), 50):
        items = [{"content": t, "context": {"dedup": False}} for t in said[start : start + 50]]
        ids += services.add_thoughts(user=user, items=items)["ids"]
    elapsed = time.perf_counter() - started
    held: dict[str, str] = {}
    for start in range(0, len(ids), 50):
        found = services.get_memories(user=user, ids=ids[start : start + 50])["memories"]
        held.update({m["id"]: m["content"] for m in found})
    secrets = data["secrets"]
    stored = [
        c["text"] for c, i in zip(secrets, ids, strict=False) if _stored(held[i], c["secret"])
    ]
    looks = data["lookalikes"]
    changed = [t for t, i in zip(looks, ids[len(secrets) :], strict=True) if held[i] != t]
    return {
        "set": name,
        "secrets": len(secrets),
        "stored": len(stored),
        "lookalikes": len(looks),
        "changed": len(changed),
        "ms_per_add": 1000 * elapsed / len(said),
        "stored_examples": stored,
        "changed_examples": changed,
    }


def hostile_cost(runs: int = 5) -> dict:
    """The rule's time on a 40,000-character text made of names of secrets ("code 1 ..."),
    beside an ordinary text of the same length (medians, interleaved)."""
    import statistics

    from ikario_rag import secrets

    hostile = ("code 1 " * 6000)[:40_000]
    ordinary = ("The user lives in Lyon and plays the cello on Sundays. " * 800)[:40_000]
    times: dict[str, list[float]] = {"hostile": [], "ordinary": []}
    for _ in range(runs):
        for name, said in (("hostile", hostile), ("ordinary", ordinary)):
            started = time.perf_counter()
            secrets.redact(said)
            times[name].append(time.perf_counter() - started)
    return {name: 1000 * statistics.median(t) for name, t in times.items()}


def main() -> None:
    django_on_temp_db(MCP_MEMORY_ENABLED="true")
    from django.contrib.auth import get_user_model

    from memory.client import services

    index = Path(tempfile.mkdtemp(prefix="ikario-bench-secrets-")) / "index"
    with shared_memory_server(index):
        services.wait_until_ready(300)
        users = get_user_model().objects
        results = [run(name, users.create_user(f"bench-{name}")) for name in SETS]
    print(f"{'set':8} {'secrets stored':>15} {'look-alikes changed':>20}")
    for r in results:
        print(
            f"{r['set']:8} {r['stored']:>6} / {r['secrets']:<6} {r['changed']:>9} / "
            f"{r['lookalikes']:<8}"
        )
        for text in r["stored_examples"]:
            print(f"    stored: {text}")
        for text in r["changed_examples"]:
            print(f"    changed: {text}")
    print(json.dumps([{k: v for k, v in r.items() if "examples" not in k} for r in results]))
    cost = hostile_cost()
    print(
        f"rule on 40,000 characters: hostile {cost['hostile']:.0f} ms, ordinary "
        f"{cost['ordinary']:.0f} ms (median of 5)"
    )
    if any(r["set"] == "dev" and (r["stored"] or r["changed"]) for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
