"""Tasks the worker tests enqueue (a task must live at module level to be found by path)."""

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
