from django.apps import AppConfig


class ChatConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "chat"

    def ready(self):
        from django.contrib.auth.signals import user_logged_out

        from chat import checks  # noqa: F401  (registers the site's system checks)
        from chat.incognito import on_logged_out
        from chat.signals import turn_finished
        from chat.tasks import on_turn_finished

        # A conversation's summaries are brought up to date after each answer.
        turn_finished.connect(on_turn_finished, dispatch_uid="chat.summaries")
        # Logging out ends the user's incognito chats.
        user_logged_out.connect(on_logged_out, dispatch_uid="chat.incognito")
