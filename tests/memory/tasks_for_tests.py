"""Tasks the worker tests enqueue (a task must live at module level to be found by path)."""

import time
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction
from django_tasks import task

from memory.quiet import wait_until_chat_is_quiet


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
def count_until(counter: str, stop: str, *, in_transaction: bool = False) -> int:
    """Count into the file `counter` until the file `stop` exists, never looking at the
    chat: one long step of a task. With `in_transaction`, count inside a database
    transaction, then look at the chat (memory/quiet.py) and write `<counter>.after`."""
    n = 0

    def count() -> None:
        nonlocal n
        while not Path(stop).exists():
            n += 1
            Path(counter).write_text(str(n))
            time.sleep(0.005)

    if not in_transaction:
        count()
        return n
    with transaction.atomic():  # SQLite's write lock, taken at BEGIN (IMMEDIATE)
        count()
    wait_until_chat_is_quiet()
    Path(f"{counter}.after").write_text(str(n))
    return n


@task()
def refuse_input() -> None:
    """A job the memory refuses for good: what it sends will never be valid."""
    from memory.errors import MemoryInputError

    raise MemoryInputError("items[0].content", "contains characters that cannot be stored")
