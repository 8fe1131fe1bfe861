from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0010_notes"),
    ]

    operations = [
        # The rows already there were queued when they were made: True for them, False
        # (the model's default) for new ones until their enqueue succeeds.
        migrations.AddField(
            model_name="pendinglearning",
            name="queued",
            field=models.BooleanField(default=True),
        ),
        migrations.AlterField(
            model_name="pendinglearning",
            name="queued",
            field=models.BooleanField(default=False),
        ),
    ]
