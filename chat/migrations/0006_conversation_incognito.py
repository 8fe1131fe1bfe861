from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0005_message_search"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="incognito",
            field=models.BooleanField(default=False),
        ),
    ]
