from django.apps import AppConfig


class MemoryConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "memory"

    def ready(self):
        from chat.signals import conversation_pinned, turn_finished
        from memory import extraction  # noqa: F401 - connects post_save of SavedExchange
        from memory.autosave import on_conversation_pinned, on_turn_finished

        # Auto-save listens to chat; chat knows nothing of memory.
        turn_finished.connect(on_turn_finished, dispatch_uid="memory.autosave")
        conversation_pinned.connect(on_conversation_pinned, dispatch_uid="memory.autosave.pin")
