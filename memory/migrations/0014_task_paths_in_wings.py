"""Background tasks queued before memory's modules moved into wings: their rows name
the module a task (or its error) was in, and django-tasks-db resolves that dotted path with
import_string when it runs the task or reads its result. Each is renamed to where it is now."""

from django.db import migrations

MOVED = {
    "memory.errors.MemoryBusy": "memory.client.errors.MemoryBusy",
    "memory.errors.MemoryDisabled": "memory.client.errors.MemoryDisabled",
    "memory.errors.MemoryInputError": "memory.client.errors.MemoryInputError",
    "memory.errors.MemoryNotFound": "memory.client.errors.MemoryNotFound",
    "memory.errors.MemoryOff": "memory.client.errors.MemoryOff",
    "memory.errors.MemoryPaused": "memory.client.errors.MemoryPaused",
    "memory.errors.MemoryServiceError": "memory.client.errors.MemoryServiceError",
    "memory.errors.MemoryToolError": "memory.client.errors.MemoryToolError",
    "memory.errors.MemoryUnavailable": "memory.client.errors.MemoryUnavailable",
    "memory.judge.BadAnswer": "memory.client.judge.BadAnswer",
    "memory.jobs.run_job": "memory.client.jobs.run_job",
    "memory.autosave.save_conversation": "memory.learning.conversations.save_conversation",
    "memory.backup.ChatMemoryOff": "memory.learning.backup.ChatMemoryOff",
    "memory.backup.KeptOutOfMemory": "memory.learning.backup.KeptOutOfMemory",
    "memory.profile.rebuild_profile": "memory.learning.profile.rebuild_profile",
    "memory.summary_index.index_summaries": "memory.learning.summaries.index_summaries",
    "memory.notes.sync_notes": "memory.notes.sync.sync_notes",
    "memory.notes_paths.NoteSkipped": "memory.notes.paths.NoteSkipped",
    "memory.notes_paths.PathRefused": "memory.notes.paths.PathRefused",
    "memory.worker.TaskAbandoned": "memory.worker.database.TaskAbandoned",
}


def _rename(apps, pairs):
    results = apps.get_model("django_tasks_database", "DBTaskResult").objects
    for old, new in pairs:
        results.filter(task_path=old).update(task_path=new)
        results.filter(exception_class_path=old).update(exception_class_path=new)


def forwards(apps, schema_editor):
    _rename(apps, MOVED.items())


def backwards(apps, schema_editor):
    _rename(apps, [(new, old) for old, new in MOVED.items()])


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0013_one_memory_job_under_way"),
        ("django_tasks_database", "0021_conditional_partial_index_ordering"),
    ]

    operations = [migrations.RunPython(forwards, backwards, elidable=True)]
