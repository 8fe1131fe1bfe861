"""Writes that are safe to retry: the `Idempotency-Key` header of the JSON APIs.

A client that did not get an answer (a timeout, a connection reset, a server restarted
mid-request) cannot tell whether its write happened. Sent again with the same
`Idempotency-Key` (any string of 1 to 255 printable ASCII characters, e.g. a UUID, unique
per write), the request is not run again: the first one's answer comes back (with
`Idempotent-Replayed: true`). Keys are the user's own and kept IDEMPOTENCY_KEY_TTL seconds
(a day).

- The same key with another request (method, path or body) is refused: 422.
- While the first request runs, a retry gets 409 with Retry-After.
- `@idempotent(atomic=True)` (writes to this app's database only): the view and the
  record of its answer commit in one transaction, so either both happened or neither did.
- Otherwise (a write to the memory server, a streamed turn) the key is claimed before
  the view runs. If nobody will record its answer any more (its process is dead on this
  host, the request failed without recording it, e.g. the database went away to its end,
  or the claim is older than IDEMPOTENCY_CLAIM_TIMEOUT), a retry runs the request again,
  with `request.idempotent_rerun` set: a turn then answers the message the first attempt
  saved (recorded on the claim with `note_saved`, in the transaction that saved it) instead
  of saving it twice; the memory's writes have natural keys (an identical memory is found
  again, not stored twice).
- An answer streamed as it was written (Server-Sent Events) is not stored: a retry gets
  409 saying it was answered, and reads the result in the conversation.

Without the header nothing changes.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
from datetime import timedelta

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.conf import settings
from django.db import IntegrityError, transaction
from django.http import HttpResponse, JsonResponse
from django.utils import timezone

from chat.models import IdempotentRequest
from core import processes

HEADER = "Idempotency-Key"
_KEY = re.compile(r"[\x21-\x7e]{1,255}")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def key_ttl() -> float:
    return float(settings.IDEMPOTENCY_KEY_TTL)


def claim_timeout() -> float:
    return float(settings.IDEMPOTENCY_CLAIM_TIMEOUT)


def _problem(status: int, reason: str) -> JsonResponse:
    response = JsonResponse({"error": {"field": HEADER, "reason": reason}}, status=status)
    if status == 409:
        response["Retry-After"] = "1"
    return response


# The claims this process is running now: one of its claims that is not here was left by a
# request that failed without recording it (the database away to the end).
_running: set[int] = set()


@contextlib.contextmanager
def _running_claim(request, row: IdempotentRequest):
    """While the claimed request runs in this process (see `_abandoned`)."""
    request.idempotent_claim = row  # the view may note what it saved (`note_saved`)
    _running.add(row.pk)
    try:
        yield
    finally:
        _running.discard(row.pk)


def _owner() -> str:
    return processes.owner()


def _abandoned(row: IdempotentRequest) -> bool:
    """Nobody will record this claim's answer any more."""
    if timezone.now() - row.created_at > timedelta(seconds=claim_timeout()):
        return True
    if row.owner == processes.owner():
        return row.pk not in _running
    return processes.dead(row.owner)


def _fingerprint(request) -> str:
    digest = hashlib.sha256(request.method.encode())
    digest.update(b"\0" + request.get_full_path().encode() + b"\0")
    digest.update(request.body)
    return digest.hexdigest()


def _replay(row: IdempotentRequest) -> HttpResponse:
    if row.streamed:
        return _problem(409, "this key's request was answered as a stream: it is not run again")
    response = HttpResponse(bytes(row.body), status=row.status, content_type=row.content_type)
    response["Idempotent-Replayed"] = "true"
    return response


def _claim(request, key: str) -> tuple[IdempotentRequest | None, HttpResponse | None]:
    """(the claim to record the answer in, None) or (None, the answer to give instead)."""
    IdempotentRequest.objects.filter(
        created_at__lt=timezone.now() - timedelta(seconds=key_ttl())
    ).delete()
    fingerprint = _fingerprint(request)
    try:
        with transaction.atomic():
            row = IdempotentRequest.objects.create(
                user=request.user, key=key, fingerprint=fingerprint, owner=_owner()
            )
        return row, None
    except IntegrityError:
        pass
    row = IdempotentRequest.objects.filter(user=request.user, key=key).first()
    if row is None:  # expired and purged meanwhile: a fresh claim
        return _claim(request, key)
    if row.fingerprint != fingerprint:
        return None, _problem(422, "this key was used for another request")
    if row.status is not None:
        return None, _replay(row)
    if not _abandoned(row):
        return None, _problem(409, "a request with this key is still running")
    taken = IdempotentRequest.objects.filter(pk=row.pk, owner=row.owner, status=None).update(
        owner=_owner(), created_at=timezone.now()
    )
    if not taken:  # another retry took it over first
        return None, _problem(409, "a request with this key is still running")
    row.owner = _owner()
    request.idempotent_rerun = True  # the view may find what the first attempt wrote
    return row, None


def note_saved(request, message) -> None:
    """Record on this request's claim the message it saved (call it in the transaction that
    saves it): a re-run of the request answers that message, whatever was said since."""
    claim = getattr(request, "idempotent_claim", None)
    if claim is not None:
        IdempotentRequest.objects.filter(pk=claim.pk).update(saved_message=message)
        claim.saved_message_id = message.pk


def saved_message_id(request) -> int | None:
    """The message a first attempt of this request saved (see `note_saved`), if any."""
    claim = getattr(request, "idempotent_claim", None)
    return claim.saved_message_id if claim is not None else None


def _record(row: IdempotentRequest, response: HttpResponse) -> None:
    row.status = response.status_code
    row.content_type = response.get("Content-Type", "")
    row.streamed = response.streaming
    row.body = b"" if response.streaming else response.content
    row.save(update_fields=["status", "content_type", "streamed", "body"])


def _forget(row: IdempotentRequest) -> None:
    """The view raised: nothing to give back, so a retry runs it again."""
    IdempotentRequest.objects.filter(pk=row.pk, status=None).delete()


def _key_of(request) -> tuple[str | None, HttpResponse | None]:
    key = request.headers.get(HEADER)
    if key is None or request.method in SAFE_METHODS:
        return None, None
    if not _KEY.fullmatch(key):
        return None, _problem(400, "must be 1 to 255 printable ASCII characters")
    return key, None


def idempotent(view=None, *, atomic: bool = False):
    """A write view that a retry with the same Idempotency-Key does not run twice."""
    if view is None:
        return functools.partial(idempotent, atomic=atomic)

    if iscoroutinefunction(view):

        @functools.wraps(view)
        async def async_wrapper(request, *args, **kwargs):
            key, refused = _key_of(request)
            if refused or key is None:
                return refused or await view(request, *args, **kwargs)
            user = await request.auser()
            if not user.is_authenticated:
                return await view(request, *args, **kwargs)
            row, answer = await sync_to_async(_claim)(request, key)
            if answer is not None:
                return answer
            with _running_claim(request, row):
                try:
                    response = await view(request, *args, **kwargs)
                except BaseException:
                    await sync_to_async(_forget)(row)
                    raise
                await sync_to_async(_record)(row, response)
            return response

        return async_wrapper

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        key, refused = _key_of(request)
        if refused or key is None:
            return refused or view(request, *args, **kwargs)
        if not request.user.is_authenticated:
            return view(request, *args, **kwargs)
        if atomic:
            # The claim, the view's writes and the answer commit together: a process that
            # dies midway leaves no trace, and a retry runs the request as new.
            with transaction.atomic():
                row, answer = _claim(request, key)
                if answer is not None:
                    return answer
                response = view(request, *args, **kwargs)
                _record(row, response)
                return response
        row, answer = _claim(request, key)
        if answer is not None:
            return answer
        with _running_claim(request, row):
            try:
                response = view(request, *args, **kwargs)
            except BaseException:
                _forget(row)
                raise
            _record(row, response)
        return response

    return wrapper
