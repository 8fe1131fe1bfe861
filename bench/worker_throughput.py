"""Background jobs per second on RQ: RQ's default worker (a forked process and a new memory
session per job) against ours (memory/worker/rq.py: jobs in the worker's own process, one
long-lived memory session), with 1, 2 and 4 workers.

Starts its own redis-server, a memory server over streamable HTTP (with a token) and
`manage.py rqworker --burst` processes on a throwaway SQLite database; each job is one recall
search (bench/worker_jobs.py). The figure is jobs / (first job started to last job ended, as
RQ recorded them: a worker's own start-up is left out), the median of --runs runs.

    make bench-workers      (.venv/bin/python bench/worker_throughput.py --jobs 200 --runs 3)
"""

from __future__ import annotations

import argparse
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

from tests.fixtures.redis_server import redis_on  # noqa: E402
from tests.net import serve_on_a_free_port, stop  # noqa: E402

WORKER_CLASSES = {
    "rq default (fork per job)": "rq.worker.Worker",
    "ours": "memory.worker.rq.Worker",
}


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

    return serve_on_a_free_port(start, timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", default="1,2,4")
    options = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="ikario-workers-"))
    token = secrets.token_urlsafe(24)
    base_env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
        "DEBUG": "true",
        "LOG_LEVEL": "WARNING",
        "HF_HUB_OFFLINE": "1",
        "IKARIO_TOKEN": token,
        "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}",
    }
    redis, redis_port = serve_on_a_free_port(lambda port: redis_on(port, workdir), timeout=30)
    memory, memory_port = start_memory_server(base_env, workdir)
    env = {
        **base_env,
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "MCP_IKARIO_SERVER_URL": f"http://127.0.0.1:{memory_port}/mcp",
    }
    os.environ.update(env)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django_rq import get_queue
    from rq.job import Job

    from bench.worker_jobs import recall

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench-worker")
    queue = get_queue("default")
    print(f"{options.jobs} jobs (one recall search each), median of {options.runs} runs")
    print("| worker | workers | jobs/s (median) | runs |")
    print("|---|---|---|---|")
    try:
        for label, worker_class in WORKER_CLASSES.items():
            for count in (int(n) for n in options.workers.split(",")):
                rates = []
                for _ in range(options.runs):
                    queue.empty()
                    ids = [
                        recall.enqueue(user.pk, f"what did we plan for the trip {n}").id
                        for n in range(options.jobs)
                    ]
                    workers = [
                        subprocess.Popen(
                            [sys.executable, "manage.py", "rqworker", "default", "--burst"]
                            + ["--worker-class", worker_class],
                            cwd=ROOT,
                            env=env,
                            stdout=subprocess.DEVNULL,
                            stderr=(workdir / "workers.log").open("a"),
                        )
                        for _ in range(count)
                    ]
                    for worker in workers:
                        worker.wait()
                    jobs = Job.fetch_many(ids, connection=queue.connection)
                    assert all(job.get_status() == "finished" for job in jobs), "jobs not run"
                    began = min(job.started_at for job in jobs)
                    ended = max(job.ended_at for job in jobs)
                    rates.append(options.jobs / (ended - began).total_seconds())
                rounded = ", ".join(f"{rate:.1f}" for rate in rates)
                print(f"| {label} | {count} | {statistics.median(rates):.1f} | {rounded} |")
    finally:
        stop(memory)
        stop(redis)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
