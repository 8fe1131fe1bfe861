"""Time kept: when a learnt fact was said, and when it holds.

A fact is dated by the message it was said in (its time, not the day's midnight), unless it
names a date: "on 12 May", "next Monday", "depuis 2019", "until the end of February", read
against the message's date. The phrases are found by the patterns below and read by
dateparser (dates in English and French, relative ones included); a plan is dated when it
happens, tagged `planned` and never expires before its date (memory/learning/person/sheet.py
says it as past once the date has passed); a state with an end ("until ...") expires at that
end; one with none keeps the default it was given.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import dateparser

from ikario_rag.text import fold
from memory.learning.person.sheet import PLANNED, when_of

_MONTH = (
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"janvier|fevrier|mars|avril|mai|juin|"
    r"juillet|aout|septembre|octobre|novembre|decembre"
)
_WEEKDAY = (
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche"
)
_ORDINAL = r"(?:st|nd|rd|th|er)?"
# A date as people say it; dateparser reads what these find. A month or a year alone is a
# date after "in", "en"... only in _ON ("the user may move" names no month).
_DAY = (
    rf"(?:next|this|prochain|ce) (?:{_WEEKDAY})|(?:{_WEEKDAY})(?: prochain| next week)?|"
    rf"(?:the )?\d{{1,2}}{_ORDINAL} (?:of )?(?:{_MONTH})(?: \d{{4}})?|"
    rf"(?:{_MONTH}) \d{{1,2}}{_ORDINAL}(?:,? \d{{4}})?|(?:{_MONTH}) \d{{4}}|"
    r"next (?:week|month|year)|la semaine prochaine|le mois prochain|l'annee prochaine|"
    r"tomorrow|demain|\d{4}-\d{2}-\d{2}"
)
_MONTH_OR_YEAR = rf"(?:{_MONTH})|(?:19|20)\d{{2}}"
_END_OF = r"(?:the end of |la fin (?:de |d')|fin (?:de |d')?|end of )"
_UNTIL = re.compile(
    rf"\b(?:until|till|through|jusqu'(?:a|au|en)|jusque)\s+(?P<end>{_END_OF})?"
    rf"(?P<date>{_DAY}|{_MONTH_OR_YEAR})\b"
)
_SINCE = re.compile(
    rf"\b(?:since|depuis|from|a partir de|des)\s+(?:le |the )?(?P<date>{_DAY}|{_MONTH_OR_YEAR})\b"
)
_ON = re.compile(
    rf"\b(?:(?P<date>{_DAY})|(?:in|en|au mois de|early|late|mid) (?P<month>{_MONTH_OR_YEAR}))\b"
)
_YEAR_ONLY = re.compile(r"^(?:19|20)\d{2}$")


@dataclass
class Named:
    """The dates a fact names (aware, UTC): from when, until when, or on which day."""

    since: datetime | None = None
    until: datetime | None = None
    on: datetime | None = None


def _read(phrase: str, said_at: datetime, *, future: bool, last_day: bool = False):
    if phrase.startswith("the "):
        phrase = phrase[4:]
    found = dateparser.parse(
        phrase,
        languages=["en", "fr"],
        settings={
            "RELATIVE_BASE": said_at.astimezone(UTC).replace(tzinfo=None),
            "PREFER_DATES_FROM": "future" if future else "past",
            "PREFER_DAY_OF_MONTH": "last" if last_day else "first",
            "RETURN_AS_TIMEZONE_AWARE": False,
        },
    )
    if found is None:
        return None
    if _YEAR_ONLY.match(phrase):  # "depuis 2019": the year, not today's day of it
        found = found.replace(month=12 if last_day else 1, day=31 if last_day else 1)
    return found.replace(tzinfo=UTC)


def named_in(content: str, said_at: datetime) -> Named:
    """The dates `content` names, read against `said_at` (the message's time)."""
    folded = fold(" ".join(str(content or "").split()))
    named = Named()
    until = _UNTIL.search(folded)
    if until:
        end = _read(until.group("date"), said_at, future=True, last_day=True)
        named.until = end and end.replace(hour=23, minute=59)
        folded = folded[: until.start()] + folded[until.end() :]
    since = _SINCE.search(folded)
    if since:
        named.since = _read(since.group("date"), said_at, future=False)
        folded = folded[: since.start()] + folded[since.end() :]
    on = _ON.search(folded)
    if on:
        named.on = _read(on.group("date") or on.group("month"), said_at, future=True)
    return named


def _ttl_days(ttl) -> int:
    held = re.match(r"^(\d+)([mhdw])$", str(ttl))
    if not held:
        return 1
    return int(held.group(1)) * {"w": 7, "d": 1}.get(held.group(2), 0) or 1


def _hours(delta: timedelta) -> int:
    return max(1, math.ceil(delta.total_seconds() / 3600))


def timed(item: dict, said_at: datetime, *, now: datetime) -> dict:
    """`item` (an add_thoughts item) dated by what its fact names, else by the message's
    time: a named end sets its ttl, a named start its date, a date to come makes it planned
    (no ttl before it); `now` is when it is written (a ttl counts from there)."""
    context = item.setdefault("context", {})
    named = named_in(item["content"], said_at)
    if str(context.get("date") or "")[:10] in ("", said_at.date().isoformat()):
        # Not dated by the model: when it starts or happens, else the message's time (not
        # the day's midnight).
        start = named.since or named.on
        context["date"] = (start or said_at).isoformat()
    if named.until and named.until > now:
        context["ttl"] = f"{_hours(named.until - now)}h"
    elif named.since:
        context.pop("ttl", None)  # said to hold since then: it lasts
    happens = when_of(context["date"])
    if not named.until and happens and happens.date() > said_at.date():
        context["tags"] = [*context.get("tags", []), PLANNED]
        if context.get("kind") == "goal":
            context.pop("ttl", None)  # a plan: never expired before its date, then past
        elif context.get("ttl"):  # a state that starts then: its life counts from that day
            context["ttl"] = f"{_hours(happens - now) + 24 * _ttl_days(context['ttl'])}h"
    return item
