"""A notes folder (an Obsidian vault) as memory: indexing a generated vault, and the re-sync
after one note changed (`make bench-notes`).

    .venv/bin/python bench/notes_vault.py [--notes 5000] [--tagged 0.2] [--runs 3]

A vault of --notes Markdown notes in 50 folders is generated (each 3 heading sections of
prose, front matter on half of them); a --tagged share carries `#ikario` (in the text or
the front matter's `tags:`). Through the app's own sync (memory/notes/sync.py) and the real
ikario_rag server over stdio, on a throwaway database and index:
- full sync: a user's first sync of the whole vault (every note listed, read and hashed, the
  tagged ones parsed and stored as memories, one per section; in jobs of
  NOTES_SYNC_MAX_NOTES notes run one after the other), notes per second, median of
  --runs runs (each run a new user on the same server, started once the server has written
  the vectors of the run before);
- re-sync after one note changed: one tagged note edited (a later mtime), then a sync:
  its time (median of 5) and how many notes it read (must be 1);
- re-sync with nothing changed: the listing alone (median of 5).
The full sync's time is split into the memory server's add_thoughts calls and the rest
(the app's listing, reading, hashing, parsing and rows).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _setup import django_on_temp_db, memory_on, wait_indexed  # noqa: E402

WORDS = [
    *("garden", "lisbon", "budget", "train", "friend", "recipe", "project", "meeting"),
    *("book", "chapter", "river", "mountain", "coffee", "morning", "report", "deadline"),
    *("idea", "question", "answer", "music", "piano", "lesson", "travel", "museum"),
    *("winter", "summer", "market", "bread", "lemon", "tomato", "bicycle", "harbour"),
]


def prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def make_vault(folder: Path, notes: int, tagged: float, seed: int = 5) -> list[str]:
    """Write the vault; returns the paths of its tagged notes."""
    rng = random.Random(seed)
    tagged_paths = []
    for n in range(notes):
        path = f"area{n % 50:02}/note {n:05}.md"
        is_tagged = rng.random() < tagged
        front = n % 2 == 0
        lines = []
        if front:
            tags = "[journal, ikario]" if is_tagged else "[journal]"
            lines += ["---", f"title: Note {n}", f"tags: {tags}", "---"]
        lines += [prose(rng, 30), ""]
        for heading in ("Context", "Details", "Next"):
            lines += [f"## {heading}", prose(rng, 40), ""]
        if is_tagged and not front:
            lines.append("#ikario")
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(lines), encoding="utf-8")
        if is_tagged:
            tagged_paths.append(path)
    return tagged_paths


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=5000)
    parser.add_argument("--tagged", type=float, default=0.2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ikario-bench-notes-"))
    index_dir = work / "index"
    index_dir.mkdir()
    root = work / "vaults"
    django_on_temp_db(
        MCP_MEMORY_ENABLED="true",
        DEBUG="false",
        MCP_CONNECT_TIMEOUT="180",
        NOTES_ROOT=str(root),
    )
    memory_on(index_dir)
    from django.contrib.auth import get_user_model

    from memory.client import mcp, services
    from memory.models import NotesVault
    from memory.notes import sync as notes

    # The memory server's share of a sync: the time spent in its add_thoughts calls.
    in_server = []
    add_thoughts = services.add_thoughts

    def timed_add_thoughts(**kwargs):
        started = time.perf_counter()
        try:
            return add_thoughts(**kwargs)
        finally:
            in_server.append(time.perf_counter() - started)

    notes.services.add_thoughts = timed_add_thoughts

    folder = root / "vault"
    started = time.perf_counter()
    tagged_paths = make_vault(folder, args.notes, args.tagged)
    print(
        f"vault: {args.notes} notes ({len(tagged_paths)} tagged) written in "
        f"{time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    services.wait_until_ready(300)

    full, writes, memories = [], [], 0
    for run in range(args.runs):
        wait_indexed()  # the run before's vectors: not this run's cost
        user = get_user_model().objects.create_user(f"bench-notes-{run}")
        granted = str(folder.resolve())  # the operator's grant (manage.py notes_grant)
        NotesVault.objects.create(user=user, granted_folder=granted, folder=granted)
        in_server.clear()
        started = time.perf_counter()
        done = notes.sync_user(user)
        read = done.read
        while done.left:  # the jobs a worker would run one after the other
            done = notes.sync_user(user)
            read += done.read
        full.append(time.perf_counter() - started)
        writes.append(sum(in_server))
        memories = NotesVault.objects.get(user=user).last_sync["memories"]
        assert read == args.notes, (read, done)
        print(
            f"full sync {run + 1}: {full[-1]:.1f} s ({writes[-1]:.1f} s writing)", file=sys.stderr
        )

    rng = random.Random(9)
    changed, read, unchanged = [], [], []
    for round_ in range(5):
        path = folder / rng.choice(tagged_paths)
        path.write_text(path.read_text() + f"\nEdited in round {round_}.\n", encoding="utf-8")
        later = time.time() + 10 + round_
        os.utime(path, (later, later))
        started = time.perf_counter()
        done = notes.sync_user(user)
        changed.append(time.perf_counter() - started)
        read.append(done.read)
        started = time.perf_counter()
        still = notes.sync_user(user)
        unchanged.append(time.perf_counter() - started)
        assert still.read == 0, still
    mcp.close_client()

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    median_full = statistics.median(full)
    print(f"\nnotes vault: {args.notes} notes, {len(tagged_paths)} tagged -> {memories} memories")
    print(f"machine load average (1/5/15 min): {load} on {os.cpu_count()} cores")
    print(
        f"full sync: {args.notes / median_full:.0f} notes/s "
        f"(median of {args.runs}: {median_full:.1f} s; runs {', '.join(f'{s:.1f}' for s in full)})"
    )
    median_writes = statistics.median(writes)
    print(
        f"  of which add_thoughts (the memory server storing {memories} memories): "
        f"{median_writes:.1f} s, {memories / median_writes:.0f} memories/s; the app's own "
        f"part (list, read, hash, parse, rows): {median_full - median_writes:.1f} s, "
        f"{args.notes / (median_full - median_writes):.0f} notes/s"
    )
    print(
        f"re-sync after one note changed: {statistics.median(changed) * 1000:.0f} ms "
        f"(median of 5), notes read: {read}"
    )
    print(
        f"re-sync with nothing changed: {statistics.median(unchanged) * 1000:.0f} ms (median of 5)"
    )
    ratio = median_full / statistics.median(changed)
    print(f"full sync / re-sync after one change: {ratio:.0f}x")


if __name__ == "__main__":
    main()
