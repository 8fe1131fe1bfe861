"""manage.py memory_backfill [--user U] [--since DATE] [--dry-run]

Backs up every conversation with exchanges not in memory yet, never saved or grown since
its last backup, into its owner's memory (memory/learning/backup.py: one memory per exchange, only
the new ones). Idempotent: a second run finds nothing left to do. What was said while
memory was paused or off is never backed up (memory/learning/kept_out.py).
"""

from datetime import datetime, time

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Count, Q
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from tqdm import tqdm

from chat.models import Conversation, Message
from ikario_rag import contract
from memory.client import services
from memory.client.errors import MemoryDisabled, MemoryServiceError, MemoryUnavailable
from memory.learning.backup import SAVED_STATUSES, KeptOutOfMemory, backup_conversation
from memory.management.commands._memory import said
from memory.management.commands._users import find_user


def _since(value: str) -> datetime:
    moment = parse_datetime(value)
    if moment is None:
        day = parse_date(value)
        if day is None:
            raise CommandError(f"--since: {value!r} is not a date (YYYY-MM-DD)")
        moment = datetime.combine(day, time.min)
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment


class Command(BaseCommand):
    help = "Save to memory every conversation's exchanges not in memory yet (one memory each)."

    def add_arguments(self, parser):
        parser.add_argument("--user", help="only this user's conversations (username or id)")
        parser.add_argument("--since", help="only conversations updated since DATE")
        parser.add_argument(
            "--category", default=contract.DEFAULT_CATEGORY, help=", ".join(contract.CATEGORIES)
        )
        parser.add_argument("--dry-run", action="store_true", help="list, save nothing")

    def handle(self, *args, **options):
        unsaved_answers = Message.objects.filter(
            role=Message.Role.ASSISTANT,
            status__in=SAVED_STATUSES,
            saved_exchange__isnull=True,
            # Said while memory was paused or off: never saved (memory/learning/kept_out.py).
            kept_from_memory__isnull=True,
        ).exclude(content="")
        pending = (
            Conversation.objects.filter(pk__in=unsaved_answers.values("conversation_id"))
            # Memory off means off: never back up what a user chose to keep out of it.
            .exclude(user__memory_settings__memory_enabled=False)
            .exclude(settings__enable_memory=False)
            .annotate(filled=Count("messages", filter=~Q(messages__content="")))
            .select_related("user")
            .order_by("updated_at", "pk")
        )
        if options["user"]:
            pending = pending.filter(user=find_user(options["user"]))
        if options["since"]:
            pending = pending.filter(updated_at__gte=_since(options["since"]))
        conversations = list(pending)

        if options["dry_run"]:
            for conversation in conversations:
                self.stdout.write(
                    f"would back up #{conversation.pk} {conversation.title!r} "
                    f"({conversation.user}, {conversation.filled} messages)"
                )
            self.stdout.write(f"{len(conversations)} conversation(s) to back up (dry run).")
            return

        services.wait_until_ready()  # a server still starting is slower than one call
        saved = failed = exchanges = 0
        # The raw stream: OutputWrapper adds a newline to every write, breaking the bar.
        bar = tqdm(conversations, desc="Backing up", unit="conv", file=self.stderr._out)
        for conversation in bar:
            try:
                result = backup_conversation(conversation, category=options["category"])
            except KeptOutOfMemory:
                continue  # its new exchanges were all said while memory was paused or off
            except (MemoryDisabled, MemoryUnavailable) as exc:
                bar.close()
                raise CommandError(
                    f"stopped after {saved} backup(s): {said(exc)} (run again to resume)"
                ) from None
            except MemoryServiceError as exc:
                failed += 1
                self.stderr.write(f"#{conversation.pk} not backed up: {exc}")
                continue
            saved += 1 if result.saved else 0
            exchanges += result.saved
        bar.close()
        self.stdout.write(
            f"Backed up {saved} conversation(s) ({exchanges} new exchange(s)); {failed} failed."
        )
