"""manage.py memory_stats [--user U] [--json]: the memory server's state and counts.

For operators: without --user it prints the server's `health` object (the embedding model,
memories waiting for their vector, or why memory is unavailable and the SQLite error) and,
when the server cannot be reached, the client's last connection error in full.
"""

import json

from django.core.management.base import BaseCommand, CommandError

from chat.models import Conversation
from memory.client import services
from memory.management.commands._users import find_user


class Command(BaseCommand):
    help = "Show the memory server's status, health and how many memories it holds."
    # The system checks import every URL and view (the Anthropic SDK with them): seconds of
    # start-up that a read-only memory command never needs (`manage.py check` runs them).
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--user", help="only this user's memories (username or id)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        conversations = Conversation.objects.all()
        services.wait_until_ready()  # a server still starting is slower than one call
        if options["user"]:
            user = find_user(options["user"])
            stats = services.memory_stats(user=user)
            conversations = conversations.filter(user=user)
        else:
            health = services.server_health()
            stats = {"status": health["status"], "error": health["error"]}
            if health["server"] is not None:
                stats.update(health["server"])
                stats["status"] = "connected"
            stats["client"] = health["client"]
        stats["conversations"] = conversations.count()
        stats["backed_up_conversations"] = conversations.filter(has_memory_backup=True).count()

        if options["json"]:
            self.stdout.write(json.dumps(stats, ensure_ascii=False, indent=2, default=str))
        else:
            self._print(stats)
        if stats["status"] == "disconnected":
            raise CommandError("memory unavailable: " + self._why(stats))

    def _print(self, stats: dict) -> None:
        self.stdout.write(f"status: {stats['status']}")
        for key in ("total_memories", "last_save", "by_category", "by_kind"):
            if stats.get(key) is not None:
                self.stdout.write(f"{key}: {stats[key]}")
        for key in ("embedding_model", "index_bytes"):
            if stats.get(key):
                self.stdout.write(f"{key}: {stats[key]}")
        for key, value in (stats.get("health") or {}).items():
            self.stdout.write(f"health.{key}: {value}")
        self.stdout.write(
            f"conversations backed up: {stats['backed_up_conversations']}/{stats['conversations']}"
        )
        if stats.get("error"):
            self.stdout.write(f"error: {stats['error']}")
        last_error = (stats.get("client") or {}).get("last_error")
        if last_error and stats["status"] != "connected":
            self.stdout.write(f"last connection error: {last_error}")

    @staticmethod
    def _why(stats: dict) -> str:
        return (stats.get("client") or {}).get("last_error") or stats.get("error") or "unknown"
