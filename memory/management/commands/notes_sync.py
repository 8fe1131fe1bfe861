"""manage.py notes_sync [--user U]: bring users' notes folders in step with their memory.

Without --user, every user with a notes folder. Only the notes whose mtime or size changed
since the last sync are read (memory/notes/sync.py); prints what each sync did.
"""

import json

from django.core.management.base import BaseCommand, CommandError

from memory.client import services
from memory.client.errors import MemoryServiceError
from memory.management.commands._memory import said as operator_said
from memory.management.commands._users import find_user
from memory.models import NotesVault
from memory.notes import sync


class Command(BaseCommand):
    help = "Sync users' notes folders (notes tagged #ikario) with their memory."

    def add_arguments(self, parser):
        parser.add_argument("--user", help="only this user (username or id)")

    def handle(self, *args, **options):
        vaults = NotesVault.objects.exclude(folder="").select_related("user")
        if options["user"]:
            vaults = vaults.filter(user=find_user(options["user"]))
        if not vaults.exists():
            self.stdout.write("no notes folder to sync")
            return
        services.wait_until_ready()  # a server still starting is slower than one call
        failed = 0
        for vault in vaults:
            try:
                done = sync.sync_user(vault.user)
                while done and done.left:  # one job's budget at a time, to the end
                    done = sync.sync_user(vault.user)
            except MemoryServiceError as exc:
                failed += 1
                self.stderr.write(f"{vault.user}: memory: {operator_said(exc)}")
                continue
            vault.refresh_from_db()
            said = {"user": str(vault.user), **(done.as_dict() if done else {})}
            if vault.error:
                said["error"] = vault.error
            self.stdout.write(json.dumps(said, ensure_ascii=False))
        if failed:
            raise CommandError(f"{failed} notes folder(s) could not be synced")
