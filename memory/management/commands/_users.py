"""Finding the user a memory command acts for, by username or id."""

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError


def find_user(name_or_id: str):
    User = get_user_model()
    user = User.objects.filter(**{User.USERNAME_FIELD: name_or_id}).first()
    if user is None and name_or_id.isdigit():
        user = User.objects.filter(pk=int(name_or_id)).first()
    if user is None:
        raise CommandError(f"No user {name_or_id!r}")
    return user
