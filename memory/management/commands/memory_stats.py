"""manage.py memory_stats [--user U] [--json]: the memory server's state and counts."""

import json

from django.core.management.base import BaseCommand, CommandError

from chat.models import Conversation
from memory import services
from memory.errors import MemoryServiceError
from memory.management.commands._users import find_user


class Command(BaseCommand):
    help = "Show the memory server's status and how many memories it holds."

    def add_arguments(self, parser):
        parser.add_argument("--user", help="only this user's memories (username or id)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        conversations = Conversation.objects.all()
        services.wait_until_ready()  # a cold start is slower than one call's timeout
        if options["user"]:
            user = find_user(options["user"])
            stats = services.memory_stats(user=user)
            conversations = conversations.filter(user=user)
        else:
            stats = {"status": services.memory_status(), "error": ""}
            if stats["status"] != "disabled":
                try:
                    stats.update(services.server_stats())
                    stats["status"] = "connected"
                except MemoryServiceError as exc:
                    stats["status"] = services.memory_status()
                    stats["error"] = str(exc)
        stats["conversations"] = conversations.count()
        stats["backed_up_conversations"] = conversations.filter(has_memory_backup=True).count()

        if options["json"]:
            self.stdout.write(json.dumps(stats, ensure_ascii=False, indent=2, default=str))
        else:
            self.stdout.write(f"status: {stats['status']}")
            for key in ("total_memories", "last_save", "by_category", "by_kind"):
                if stats.get(key) is not None:
                    self.stdout.write(f"{key}: {stats[key]}")
            for key in ("embedding_model", "index_bytes"):
                if stats.get(key):
                    self.stdout.write(f"{key}: {stats[key]}")
            self.stdout.write(
                f"conversations backed up: {stats['backed_up_conversations']}"
                f"/{stats['conversations']}"
            )
            if stats.get("error"):
                self.stdout.write(f"error: {stats['error']}")
        if stats["status"] == "disconnected":
            raise CommandError("memory server unavailable")
