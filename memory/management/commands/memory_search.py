"""manage.py memory_search "query" --user U [--n 5] [--category C] [--json]"""

import json

from django.core.management.base import BaseCommand, CommandError

from ikario_rag import contract
from memory.client import services
from memory.client.errors import MemoryServiceError
from memory.management.commands._memory import said
from memory.management.commands._users import find_user


class Command(BaseCommand):
    help = "Search one user's memories, best first."
    # The system checks import every URL and view (the Anthropic SDK with them): seconds of
    # start-up that a read-only memory command never needs (`manage.py check` runs them).
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("query")
        parser.add_argument("--user", required=True, help="username or id")
        parser.add_argument(
            "--n", type=int, default=5, help=f"how many results (1-{contract.MAX_RESULTS})"
        )
        parser.add_argument("--category", help=", ".join(contract.CATEGORIES))
        parser.add_argument("--json", action="store_true", help="print the raw JSON result")

    def handle(self, *args, **options):
        user = find_user(options["user"])
        services.wait_until_ready()  # a server still starting is slower than one call
        try:
            found = services.search_memories(
                user=user,
                query=options["query"],
                n_results=options["n"],
                filter_category=options["category"],
            )
        except MemoryServiceError as exc:
            raise CommandError(said(exc)) from None
        if options["json"]:
            self.stdout.write(json.dumps(found, ensure_ascii=False, indent=2))
            return
        results = found.get("results") or []
        if not results:
            self.stdout.write("No memories found.")
            return
        for rank, record in enumerate(results, 1):
            metadata = record.get("metadata") or {}
            excerpt = " ".join(record.get("content", "").split())
            if len(excerpt) > 160:
                excerpt = excerpt[:159] + "…"
            tags = " ".join(f"#{t}" for t in metadata.get("tags") or [])
            self.stdout.write(
                f"{rank}. [{record.get('relevance_score', 0):.2f}] "
                f"{(metadata.get('date') or '')[:10]} {metadata.get('category', '')} "
                f"{record.get('id')}\n   {excerpt}" + (f"\n   {tags}" if tags else "")
            )
        self.stdout.write(f"{len(results)} result(s), mode {found.get('mode_used')}.")
