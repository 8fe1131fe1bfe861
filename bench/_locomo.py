"""LoCoMo loading shared by the recall benchmark and its tuning harness.

Each dialog turn becomes one memory: kind "conversation", source = its dia_id, date = its
session's date; the content is the turn as said, prefixed by its speaker ("Caroline: ...")
and followed by the caption of a shared photo when there is one.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

# The LoCoMo dev split is not in the repository: LOCOMO_DIR names its directory (default: the
# team's data directory next to the checkout).
DATA_DIR = Path(
    os.environ.get("LOCOMO_DIR")
    or Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo-dev"
)


@dataclass
class Turn:
    dia_id: str
    content: str
    date: str  # ISO-8601


@dataclass
class Question:
    question: str
    evidence: list[str]
    category: int


@dataclass
class Conversation:
    name: str
    turns: list[Turn]
    questions: list[Question]


def session_date(value: str) -> str:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08T13:56:00'."""
    cleaned = re.sub(r"\s+", " ", value.strip())
    return datetime.strptime(cleaned, "%I:%M %p on %d %B, %Y").isoformat()


def load(data_dir: Path = DATA_DIR) -> list[Conversation]:
    files = sorted(data_dir.glob("*.json"))
    if not files:
        # Not an empty benchmark: the scripts that fill an index to a size would loop forever.
        raise SystemExit(f"no LoCoMo conversations in {data_dir}: set LOCOMO_DIR")
    out = []
    for path in files:
        raw = json.loads(path.read_text())
        conv = raw.get("conversation", raw)
        turns: list[Turn] = []
        number = 1
        while f"session_{number}_date_time" in conv:
            session = conv.get(f"session_{number}")
            if session:
                date = session_date(conv[f"session_{number}_date_time"])
                for turn in session:
                    content = f"{turn['speaker']}: {turn['text']}"
                    if turn.get("blip_caption"):
                        content += f" [shares {turn['blip_caption']}]"
                    turns.append(Turn(turn["dia_id"], content, date))
            number += 1
        questions = [
            Question(q["question"], _evidence(q["evidence"]), int(q["category"]))
            for q in raw.get("qa", conv.get("qa", []))
            if int(q["category"]) in (1, 2, 3, 4) and q.get("evidence")
        ]
        out.append(Conversation(path.stem, turns, questions))
    return out


def recall(found: list[str], evidence: list[str], k: int) -> float:
    """Share of a question's evidence dia_ids among the first k sources returned."""
    wanted = set(_clean(e) for e in evidence)
    top = set(found[:k])
    return len(wanted & top) / len(wanted)


def _clean(dia_id: str) -> str:
    return dia_id.strip()


def _evidence(raw: list[str]) -> list[str]:
    """A few evidence entries hold two ids ("D8:6; D9:17") or a stray colon ("D:11:26")."""
    out: list[str] = []
    for entry in raw:
        for part in entry.split(";"):
            part = part.strip().replace("D:", "D")
            if part and part not in out:
                out.append(part)
    return out
