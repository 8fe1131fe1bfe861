"""What an export holds, in Ikario's words: past chats (the branch the user ended on, only the
user's and the assistant's words) and memories another assistant kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

# The assistants an export may come from: Conversation.source, and the names users read.
CHATGPT = "chatgpt"
CLAUDE = "claude"
PASTED = "pasted"
NAMES = {CHATGPT: "ChatGPT", CLAUDE: "Claude.ai", PASTED: ""}
USER = "user"
ASSISTANT = "assistant"


@dataclass
class PastMessage:
    role: str  # USER or ASSISTANT
    text: str
    at: datetime


@dataclass
class PastChat:
    source: str
    source_id: str
    title: str
    created: datetime
    updated: datetime
    messages: list[PastMessage] = field(default_factory=list)


@dataclass
class PastMemory:
    text: str
    saved: date | None
    source: str  # CLAUDE, PASTED
