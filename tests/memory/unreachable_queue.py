"""A queue that cannot be reached (its database dropped between a turn's commit and the
enqueue that follows it): the database backend, every enqueue of which fails as a dropped
connection does. Reading and running what is queued work as usual."""

from django.db import OperationalError
from django_tasks_db.backend import DatabaseBackend


class UnreachableQueue(DatabaseBackend):
    def enqueue(self, task, args, kwargs):
        raise OperationalError("server closed the connection unexpectedly")


TASKS = {"default": {"BACKEND": f"{__name__}.UnreachableQueue", "QUEUES": ["default"]}}
