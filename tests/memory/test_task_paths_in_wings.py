"""Tasks queued before memory's modules moved into wings still run after it:
the migration renames their stored paths (task and error) to paths that resolve now."""

import importlib

import pytest
from django.apps import apps
from django.utils import timezone
from django.utils.module_loading import import_string
from django_tasks.base import Task
from django_tasks_db.models import DBTaskResult

moved = importlib.import_module("memory.migrations.0014_task_paths_in_wings")


def test_it_renames_each_path_to_one_that_resolves():
    for old, new in moved.MOVED.items():
        found = import_string(new)
        assert isinstance(found, Task) or issubclass(found, Exception), new
        assert old.rpartition(".")[2] == new.rpartition(".")[2]


@pytest.mark.django_db
def test_it_runs_a_task_queued_under_its_old_path():
    old, new = next((o, n) for o, n in moved.MOVED.items() if isinstance(import_string(n), Task))
    error = next(o for o, n in moved.MOVED.items() if not isinstance(import_string(n), Task))
    row = DBTaskResult.objects.create(
        task_path=old,
        args_kwargs={"args": [], "kwargs": {}},
        queue_name="default",
        backend_name="default",
        run_after=timezone.now(),
        exception_class_path=error,
        traceback="",
    )

    moved.forwards(apps, None)

    row.refresh_from_db()
    assert row.task_path == new and row.task.func is import_string(new).func
    assert row.exception_class_path == moved.MOVED[error]
    moved.backwards(apps, None)
    row.refresh_from_db()
    assert (row.task_path, row.exception_class_path) == (old, error)
