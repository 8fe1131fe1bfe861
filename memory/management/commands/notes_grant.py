"""manage.py notes_grant USER FOLDER | USER --revoke: the operator gives an account its notes
folder, or takes it back.

A folder belongs to an account, not to a name (memory/notes/paths.py): a folder that was
on the server before the account, such as NOTES_ROOT/<name> from an older set-up, is read
for an account only once granted to it here. Revoked: the account's folder is cleared, and
the memories of its notes are forgotten at the next sync.
"""

import os

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from memory.management.commands._users import find_user
from memory.models import DEFAULT_TAG, NotesVault
from memory.notes import sync


class Command(BaseCommand):
    help = "Grant a notes folder to an account (or --revoke it)."

    def add_arguments(self, parser):
        parser.add_argument("user", help="username or id")
        parser.add_argument("folder", nargs="?", help="an existing directory on this server")
        parser.add_argument("--revoke", action="store_true", help="take the folder back")

    def handle(self, *args, **options):
        user = find_user(options["user"])
        vault = NotesVault.objects.filter(user=user).first() or NotesVault(
            user=user, tag=DEFAULT_TAG
        )
        if options["revoke"]:
            vault.granted_folder = vault.folder = vault.fixed_notes = vault.granted_by = ""
            vault.granted_at = None
            vault.save()
            sync.request_sync(user.pk)
            self.stdout.write(f"{user}: no notes folder; its notes' memories are forgotten")
            return
        if not options["folder"]:
            raise CommandError("give the folder to grant, or --revoke")
        folder = os.path.realpath(options["folder"])
        if not os.path.isdir(folder):
            raise CommandError(f"No such directory: {folder}")
        taken = NotesVault.objects.filter(granted_folder=folder).exclude(user=user).first()
        if taken is not None:
            raise CommandError(f"{folder} is granted to {taken.user} already")
        vault.granted_folder, vault.granted_by = folder, NotesVault.GRANTED
        vault.granted_at = timezone.now()
        if not vault.folder or not (vault.folder + os.sep).startswith(folder + os.sep):
            vault.folder = folder
        vault.save()
        sync.request_sync(user.pk)
        self.stdout.write(f"{user}: notes folder {folder}")
