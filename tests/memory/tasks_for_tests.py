"""Tasks the worker tests enqueue (a task must live at module level to be found by path)."""

import time
from pathlib import Path

from django.contrib.auth import get_user_model
from django_tasks import task


class Boom(RuntimeError):
    pass


@task()
def always_fails(reason: str) -> None:
    raise Boom(reason)


@task()
def rename_user(user_id: int, username: str) -> str:
    get_user_model().objects.filter(pk=user_id).update(username=username)
    return username


@task()
def note_run(path: str, name: str) -> None:
    """Append `name` to the file `path`: the order the worker ran tasks in."""
    with open(path, "a") as f:
        f.write(name + "\n")


@task()
def refuse_input() -> None:
    """A job the memory refuses for good: what it sends will never be valid."""
    from memory.client.errors import MemoryInputError

    raise MemoryInputError("items[0].content", "contains characters that cannot be stored")


@task()
def write_when_allowed(started: str, allowed: str, done: str) -> str:
    """Says it started, waits for `allowed` to exist, then writes `done` (touches files
    only, so a worker in another process runs it too)."""
    Path(started).write_text("started")
    while not Path(allowed).exists():
        time.sleep(0.05)
    Path(done).write_text("done")
    return "done"


@task()
def meet(here: str, there: str) -> None:
    """Says it runs (`here`), then waits for its partner to say so (`there`): two of them
    end only when two workers run them at the same time."""
    Path(here).write_text("here")
    deadline = time.monotonic() + 120
    while not Path(there).exists():
        if time.monotonic() > deadline:
            raise Boom(f"nobody ran {there} beside {here}")
        time.sleep(0.05)


@task()
def note_connection(path: str) -> None:
    """Append the id of the database connection it ran on (Postgres: its server process)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    with open(path, "a") as f:
        f.write(f"{pid}\n")
