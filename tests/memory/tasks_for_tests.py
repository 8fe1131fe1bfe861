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
