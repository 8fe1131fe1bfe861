from django.apps import AppConfig


class MemoryConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "memory"

    def ready(self):
        from django.db.models.signals import post_save

        from chat.models import Message
        from chat.signals import conversation_pinned, summaries_made, turn_finished
        from memory.client.live import memory_changed
        from memory.learning.conversations import (
            on_conversation_pinned,
            on_exchange_saved,
            on_turn_finished,
        )
        from memory.learning.kept_out import on_message_created
        from memory.learning.kept_out import on_turn_finished as keep_out_answer
        from memory.learning.summaries import on_summaries_made
        from memory.models import SavedExchange
        from memory.web.consumers import on_memory_changed

        # Auto-save listens to chat; chat knows nothing of memory. A message said while
        # memory is paused or off is recorded so first: every save then leaves it out.
        post_save.connect(
            on_message_created, sender=Message, dispatch_uid="memory.learning.kept_out.new"
        )
        turn_finished.connect(keep_out_answer, dispatch_uid="memory.learning.kept_out")
        turn_finished.connect(on_turn_finished, dispatch_uid="memory.learning.conversations")
        conversation_pinned.connect(
            on_conversation_pinned, dispatch_uid="memory.learning.conversations.pin"
        )
        # A conversation's summaries are searchable by meaning beside its exchanges.
        summaries_made.connect(on_summaries_made, dispatch_uid="memory.learning.summaries")
        post_save.connect(
            on_exchange_saved, sender=SavedExchange, dispatch_uid="memory.learning.extraction"
        )
        # The client wing says what changed; the web wing renders it for the open pages.
        memory_changed.connect(on_memory_changed, dispatch_uid="memory.web.consumers")
