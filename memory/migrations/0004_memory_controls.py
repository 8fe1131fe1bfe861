import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0003_user_profile"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="memorysettings",
            name="paused",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="memorysettings",
            name="autosave",
            field=models.BooleanField(default=True),
        ),
        migrations.AddField(
            model_name="memorysettings",
            name="reset_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.CreateModel(
            name="DeletedMemory",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("memory_id", models.CharField(max_length=200)),
                ("record", models.JSONField()),
                ("deleted_at", models.DateTimeField(auto_now_add=True)),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "db_table": "memory_deleted",
                "indexes": [
                    models.Index(
                        fields=["user", "memory_id"], name="memory_dele_user_id_0f85cd_idx"
                    )
                ],
            },
        ),
    ]
