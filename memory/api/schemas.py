"""What the memory API's bodies may hold: strict types (a "5" is not a 5); the services
check the rest (lengths, ranges, kinds, storable text) as they do for the MCP tools."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Body(BaseModel):
    model_config = ConfigDict(strict=True)


class SearchBody(Body):
    query: str | None = None
    n_results: int = 5
    filter_category: str | None = None
    kinds: list[str] | None = None
    tags: list[str] | None = None
    mode: str | None = None


class AddBody(Body):
    content: str | None = None
    context: dict[str, Any] | None = None


class EvolutionBody(Body):
    concept: str | None = None
    limit: int = 10


class ConsistencyBody(Body):
    statement: str | None = None


class ForgetBody(Body):
    topic: str | None = None
    min_score: float = 0.5
    dry_run: bool = False


class DeleteBody(Body):
    reason: str = ""


class FactBody(Body):
    """A fact and what it says about itself; nothing else."""

    model_config = ConfigDict(strict=True, extra="forbid")

    content: str | None = None
    kind: str | None = None
    category: str | None = None
    tags: list[str] | None = None
    subjects: list[str] | None = None
    ttl: str | None = None
    date: str | None = None
    source: str | None = None


class SettingsChange(Body):
    """The settings a PATCH changes (the others are left as they are); documentation only:
    the settings check a body themselves (memory/client/user_settings.py)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    enabled: bool | None = None
    paused: bool | None = None
    auto_recall: bool | None = None
    autosave: bool | None = None
    max_results: int | None = None
    min_score: float | None = None
    reference_past_chats: bool | None = None
