"""The jobs bench/worker_throughput.py enqueues, one kind each: the app's own tasks where
they exist (learning, a conversation's save, a notes sync), and two of its own: `nothing`
(the queue's own cost per job) and `recall` (one recall search, the smallest real piece
of memory work: every memory job calls the server at least once)."""

from django.contrib.auth import get_user_model
from django_tasks import task


@task()
def nothing() -> None:
    return None


@task()
def recall(user_id: int, query: str) -> int:
    from memory.client import services

    user = get_user_model().objects.get(pk=user_id)
    return len(services.search_memories(user=user, query=query)["results"])
