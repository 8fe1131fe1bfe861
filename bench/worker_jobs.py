"""The job bench/worker_throughput.py enqueues: one recall search on the memory server, the
smallest real piece of background work (every memory job calls the server at least once)."""

from django.contrib.auth import get_user_model
from django_tasks import task


@task()
def recall(user_id: int, query: str) -> int:
    from memory.client import services

    user = get_user_model().objects.get(pk=user_id)
    return len(services.search_memories(user=user, query=query)["results"])
