from django.db import migrations, models


def stop_all_but_the_newest(apps, schema_editor):
    """Jobs let in side by side before the constraint: the newest of a user's goes on, the
    others end as failed (importing the same file again adds only what is missing)."""
    jobs = apps.get_model("memory", "MemoryJob")
    newest: dict[int, int] = {}
    for job in jobs.objects.filter(state__in=("queued", "running")).order_by("-pk"):
        if job.user_id in newest:
            jobs.objects.filter(pk=job.pk).update(
                state="failed", error="Stopped: another import or reset was under way."
            )
        else:
            newest[job.user_id] = job.pk


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0012_notes_folder_grant"),
    ]

    operations = [
        migrations.RunPython(stop_all_but_the_newest, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="memoryjob",
            constraint=models.UniqueConstraint(
                condition=models.Q(("state__in", ("queued", "running"))),
                fields=("user",),
                name="one_memory_job_under_way",
            ),
        ),
    ]
