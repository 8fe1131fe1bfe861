"""Which users move when the memory servers change, and moving them.

    manage.py memory_shards --adding URL            # who moves to the new server
    manage.py memory_shards --removing URL          # who leaves a server taken away
    manage.py memory_shards --adding URL --move     # copy them there, then delete the old copy

The servers are MCP_IKARIO_SERVER_URLS (memory/client/shards.py). A move copies each user's memories
(the export's records, with their ids, dates and history) from their current server into
their server in the new list, checks the count, then deletes them from the old one; the copy
is idempotent, so a move interrupted and run again finishes the job. Run it with the web
processes and workers stopped (docs/DEPLOY.md, "Adding a memory server"), then give every process
the new MCP_IKARIO_SERVER_URLS and start them again.
"""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.test.utils import override_settings

from ikario_rag import contract
from memory.client import mcp, services, shards, transfer
from memory.client import validation as check


class Command(BaseCommand):
    help = "List (or move) the users whose memory server changes with a server added or removed."

    def add_arguments(self, parser):
        change = parser.add_mutually_exclusive_group(required=True)
        change.add_argument("--adding", metavar="URL", help="a memory server to add")
        change.add_argument("--removing", metavar="URL", help="a memory server to take away")
        parser.add_argument("--move", action="store_true", help="move the users listed")

    def handle(self, *args, adding=None, removing=None, move=False, **options):
        servers = mcp.server_urls()
        if not servers:
            raise CommandError("No memory server configured (MCP_IKARIO_SERVER_URLS)")
        if adding is not None:
            if adding in servers:
                raise CommandError(f"{adding} is already one of the memory servers")
            new_servers = [*servers, adding]
        else:
            if removing not in servers:
                raise CommandError(f"{removing} is not one of the memory servers")
            new_servers = [url for url in servers if url != removing]
            if not new_servers:
                raise CommandError("The last memory server cannot be removed")
        users = {check.namespace(user): user for user in get_user_model().objects.all()}
        moves = shards.moving(users, servers, new_servers)
        self.stdout.write(f"{len(moves)} of {len(users)} users move")
        for namespace, source, target in moves:
            self.stdout.write(f"{users[namespace].get_username()}\t{source} -> {target}")
            if move:
                moved = self.move(users[namespace], servers, new_servers)
                self.stdout.write(f"  moved {moved} memories")

    def move(self, user, servers: list[str], new_servers: list[str]) -> int:
        with override_settings(MCP_IKARIO_SERVER_URLS=servers):
            memories = transfer.export_memories(user=user)["memories"]
        with override_settings(MCP_IKARIO_SERVER_URLS=new_servers):
            for start in range(0, len(memories), contract.MAX_BATCH):
                batch = memories[start : start + contract.MAX_BATCH]
                services.restore_memories(user=user, memories=batch)
            copied = services.list_memories(user=user, limit=1).get("total", 0)
        if copied < len(memories):
            raise CommandError(
                f"{user.get_username()}: {copied} of {len(memories)} memories reached the new "
                "server; the old copy is kept (run the move again)"
            )
        with override_settings(MCP_IKARIO_SERVER_URLS=servers):
            if memories:
                services.forget_all(user=user)
        return len(memories)
