"""Background jobs per second, per kind of job, with one and two workers (`manage.py
db_worker`, django-tasks-db on PostgreSQL, as production runs them).

Starts its own PostgreSQL and memory server over streamable HTTP (with a token). For each
kind, run after run, queues --jobs jobs, then starts 1 (then 2) workers in burst mode (they
exit once the queue is empty). The figure is jobs / (first job started to last job ended,
as the queue recorded them: a worker's own start-up is left out), the median of --runs
runs (each run's in brackets). The same bench against RQ (Redis), before RQ was dropped:
docs/BENCHMARKS.md.

Kinds: `nothing` (the queue's own cost), `recall` (one recall search), `learning`
(save_conversation on a two-exchange chat: read for facts by the offline rules, too short to
be backed up), `save` (the same on a pinned chat: read for facts and saved whole, one memory
per exchange), `notes sync` (sync_notes of an account whose folder holds three new notes).

    make bench-workers      (.venv/bin/python bench/worker_throughput.py --jobs 40 --runs 3)
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures.postgres_server import Postgres  # noqa: E402
from tests.net import serve_on_a_free_port, stop  # noqa: E402

KINDS = ("nothing", "recall", "learning", "save", "notes sync")
WORKER = ["db_worker", "--batch", "--no-startup-delay", "--no-reload", "--interval", "0.1"]


def start_memory_server(env: dict, workdir: Path):
    def start(port: int) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "ikario_rag", "--transport", "streamable-http"]
            + ["--host", "127.0.0.1", "--port", str(port), "--index-dir", str(workdir / "index")],
            cwd=ROOT,
            env=env,
            stdout=(workdir / "memory.log").open("a"),
            stderr=subprocess.STDOUT,
        )

    return serve_on_a_free_port(start, timeout=180)


def orchestrate(options) -> None:
    """Stand the servers up, then measure each run in a process of its own."""
    workdir = Path(tempfile.mkdtemp(prefix="ikario-workers-"))
    (workdir / "notes").mkdir()
    # A directory of its own: the server runs as the `postgres` user when we are root.
    pg_home = Path(tempfile.mkdtemp(prefix="ikario-pg-"))
    database = Postgres(pg_home)
    database.start()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
        "DEBUG": "true",
        "LOG_LEVEL": "WARNING",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "ANTHROPIC_API_KEY": "",  # learning by the offline rules: no model to wait for
        "IKARIO_TOKEN": secrets.token_urlsafe(24),
        "DATABASE_URL": database.url,
        "NOTES_ROOT": str(workdir / "notes"),
    }
    memory = None
    try:
        memory, memory_port = start_memory_server(env, workdir)
        env["MCP_IKARIO_SERVER_URL"] = f"http://127.0.0.1:{memory_port}/mcp"
        manage = [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"]
        subprocess.run(manage, cwd=ROOT, env=env, check=True)
        counts = [int(n) for n in options.workers.split(",")]
        print(f"{options.jobs} jobs per run, median of {options.runs} runs (jobs/s)")
        print("| kind | " + " | ".join(f"{n} worker(s)" for n in counts) + " |")
        print("|---" * (1 + len(counts)) + "|", flush=True)
        for kind in options.kinds.split(","):
            rates = {n: [] for n in counts}
            for _ in range(options.runs):
                command = [sys.executable, __file__, "--measure", kind]
                command += ["--jobs", str(options.jobs), "--workers", options.workers]
                done = subprocess.run(
                    command, cwd=ROOT, env=env, check=True, capture_output=True, text=True
                )
                for n, rate in json.loads(done.stdout.splitlines()[-1]).items():
                    rates[int(n)].append(rate)
            cells = [
                f"{statistics.median(runs):.1f} ({', '.join(f'{r:.1f}' for r in runs)})"
                for runs in rates.values()
            ]
            print(f"| {kind} | " + " | ".join(cells) + " |", flush=True)
    finally:
        if memory is not None:
            stop(memory)
        database.stop()
        shutil.rmtree(pg_home, ignore_errors=True)
        shutil.rmtree(workdir, ignore_errors=True)


def measure(kind: str, options) -> None:
    """One run of `kind`, with each number of workers: prints their jobs/s."""
    import django

    django.setup()
    env = dict(os.environ)
    log = (Path(os.environ["NOTES_ROOT"]).parent / "workers.log").open("a")
    rates = {}
    for count in (int(n) for n in options.workers.split(",")):
        ids = enqueue(kind, options.jobs, tag=f"{count}-{secrets.token_hex(4)}")
        command = [sys.executable, "manage.py", *WORKER]
        workers = [
            subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)
            for _ in range(count)
        ]
        for worker in workers:
            worker.wait()
        rates[count] = rate(ids)
    print(json.dumps(rates))


def enqueue(kind: str, jobs: int, *, tag: str) -> list[str]:
    """Queue `jobs` jobs of `kind`, each on data of its own (the app's tasks are idempotent:
    a second run on the same chat or folder would find nothing left to do)."""
    from django.contrib.auth import get_user_model

    from bench.worker_jobs import nothing, recall
    from memory.learning.conversations import save_conversation
    from memory.models import NotesVault
    from memory.notes.sync import sync_notes
    from tests.fixtures.builders import make_conversation

    user = get_user_model().objects.create_user(f"bench-{tag}".replace(" ", "-"))
    ids = []
    for n in range(jobs):
        if kind == "nothing":
            result = nothing.enqueue()
        elif kind == "recall":
            result = recall.enqueue(user.pk, f"what did we plan for the trip {n}")
        elif kind in ("learning", "save"):
            chat = make_conversation(
                user,
                f"Trip {n}",
                f"I moved to Lyon in {2000 + n} and I work as a baker.",
                "Lyon is a fine city for bread.",
                f"My sister Anna {n} plays the cello every Sunday.",
                "The cello is a lovely instrument.",
                pinned=kind == "save",
            )
            result = save_conversation.enqueue(chat.pk)
        elif kind == "notes sync":
            owner = get_user_model().objects.create_user(f"bench-{tag}-{n}".replace(" ", "-"))
            folder = Path(os.environ["NOTES_ROOT"]) / owner.username
            folder.mkdir()
            for note in range(3):
                (folder / f"note-{note}.md").write_text(
                    f"# Note {note}\n\nThe plan for week {n}: pack the tent, book the train.\n"
                )
            NotesVault.objects.create(user=owner, folder=str(folder), granted_folder=str(folder))
            result = sync_notes.enqueue(owner.pk)
        else:
            raise SystemExit(f"unknown kind {kind!r}: one of {', '.join(KINDS)}")
        ids.append(result.id)
    return ids


def rate(ids: list[str]) -> float:
    from django_tasks import TaskResultStatus
    from django_tasks_db.models import DBTaskResult

    rows = list(DBTaskResult.objects.filter(id__in=ids))
    failed = [r.traceback for r in rows if r.status != TaskResultStatus.SUCCESSFUL]
    assert not failed, f"jobs not run: {failed[:1]}"
    began, ended = min(r.started_at for r in rows), max(r.finished_at for r in rows)
    return len(ids) / (ended - began).total_seconds()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.measure:
        measure(options.measure, options)
    else:
        orchestrate(options)


if __name__ == "__main__":
    main()
