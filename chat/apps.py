from django.apps import AppConfig


class ChatConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "chat"

    def ready(self):
        from chat.signals import turn_finished
        from chat.tasks import on_turn_finished

        # A conversation's summaries are brought up to date after each answer.
        turn_finished.connect(on_turn_finished, dispatch_uid="chat.summaries")
