"""Tasks the RQ tests enqueue: they touch files only, so a worker in another process (which
cannot see the test database) runs them too."""

import time
from pathlib import Path

from django_tasks import task


@task()
def fails_then_succeeds(counter: str, failures: int) -> int:
    """Fails its first `failures` runs, then succeeds: the runs are counted in `counter`."""
    path = Path(counter)
    runs = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(runs))
    if runs <= failures:
        raise RuntimeError(f"run {runs} fails")
    return runs


@task()
def refused_for_good(counter: str) -> None:
    """What it sends will never be valid: the memory refuses it (a permanent error)."""
    from memory.client.errors import MemoryInputError

    path = Path(counter)
    path.write_text(str(int(path.read_text()) + 1 if path.exists() else 1))
    raise MemoryInputError("items[0].content", "contains characters that cannot be stored")


@task()
def write_when_allowed(started: str, allowed: str, done: str) -> str:
    """Says it started, waits for `allowed` to exist, then writes `done`."""
    Path(started).write_text("started")
    while not Path(allowed).exists():
        time.sleep(0.05)
    Path(done).write_text("done")
    return "done"


@task()
def database_answers(done: str) -> None:
    """Asks the database a trivial question, then writes `done`."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    Path(done).write_text("yes")
