"""What chat tells the rest of the app, without knowing who listens."""

import logging

from django.dispatch import Signal

logger = logging.getLogger(__name__)

# Sent once a turn has ended and its answer is saved, whatever the outcome (status
# complete, error or stopped). Arguments: conversation, message (the assistant Message).
# chat's own summaries (chat/tasks.py) and background memory (auto-save) connect here.
turn_finished = Signal()

# Sent by the summaries job (chat/tasks.py) once a conversation's summaries are up to date.
# Arguments: conversation_id. Memory connects here to make them searchable by meaning.
summaries_made = Signal()

# Sent when a conversation becomes pinned (from the sidebar, the page or the API), after
# the change is saved. Arguments: conversation. Auto-save connects here so that pinning
# saves a conversation at once rather than at its next answer.
conversation_pinned = Signal()


def log_failed_listeners(name: str, sent: list) -> None:
    """Log the listeners that raised, from what send_robust/asend_robust returned: a
    listener's bug must not fail the turn that sent the signal, nor go unseen."""
    for receiver, outcome in sent:
        if isinstance(outcome, Exception):
            logger.error("%s listener %r failed: %r", name, receiver, outcome)
