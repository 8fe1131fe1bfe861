"""manage.py import_history --user NAME FILE: another assistant's export (a ChatGPT zip or
conversations.json, a Claude.ai conversations.json or zip, a text of pasted memories) imported
for the user, here and now, with the web upload's job (memory/history/importing.py)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memory.client.errors import MemoryServiceError
from memory.history import importing
from memory.history.past import NAMES
from memory.management.commands._users import find_user
from memory.models import MemoryJob


class Command(BaseCommand):
    help = "Import a ChatGPT or Claude.ai export, or pasted memories, for one user."

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, help="username or id")
        parser.add_argument("file", help="the export: a zip, a conversations.json or a .txt")

    def handle(self, *args, user, file, **options):
        owner = find_user(user)
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"{file}: no such file")
        try:
            job = importing.start(user=owner, request=None, path=path.resolve(), queued=False)
        except MemoryServiceError as exc:
            raise CommandError(f"{file}: {_said(exc)}") from None
        self.stdout.write(f"Reading {path.name} for {owner}…")
        while not importing.advance(job.pk):
            job.refresh_from_db()
            phase = job.outcome.get("phase")
            if phase == "learning":
                self.stdout.write(f"  learning: {job.done} of {job.total} chats")
        job.refresh_from_db()
        if job.state == MemoryJob.State.FAILED:
            raise CommandError(f"{file}: {job.error}")
        self.stdout.write(self.style.SUCCESS(summary(job)))


def _said(exc: MemoryServiceError) -> str:
    return getattr(exc, "reason", "") or exc.message


def summary(job: MemoryJob) -> str:
    o = job.outcome
    source = NAMES.get(o.get("source", ""), "") or "pasted memories"
    return (
        f"From {source}: {o.get('chats', 0):,} chats ({o.get('added', 0):,} new, "
        f"{o.get('already', 0):,} already here), {o.get('facts', 0):,} facts learnt, "
        f"{o.get('memories', 0):,} memories added, "
        f"{o.get('secrets', 0):,} kept out as secrets."
    )
