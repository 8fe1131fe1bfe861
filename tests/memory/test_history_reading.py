"""Reading other assistants' exports (memory/history/opening.py and its readers): the branch the
user ended on, only the user's and the assistant's words, attachments by name; the format
found by reading the file; a damaged or hostile file refused with what is wrong."""

from __future__ import annotations

import json
import zipfile

import pytest

from memory.history import opening
from memory.history.checks import Damaged
from memory.history.past import ASSISTANT, CHATGPT, CLAUDE, PASTED, USER
from tests.fixtures.exports import (
    branched_chatgpt_conversation,
    claude_conversation,
    claude_memories,
    write_json,
    write_zip,
)


def _chats(path):
    return list(opening.chats(opening.open_export(path)))


def test_it_keeps_only_the_branch_the_user_ended_on_and_only_what_was_said(tmp_path):
    path = write_json(tmp_path / "conversations.json", [branched_chatgpt_conversation().as_dict()])

    (chat,) = _chats(path)

    assert (chat.source, chat.title, chat.created.date().isoformat()) == (
        CHATGPT,
        "Moving to Lyon",
        "2025-03-02",
    )
    said = [(m.role, m.text) for m in chat.messages]
    assert said == [
        (USER, "My name is Mickael and I live in Lyon."),
        (ASSISTANT, "Nice to meet you, Mickael!"),
        (USER, "I work as a nurse at the hospital."),
        (ASSISTANT, "That sounds demanding."),
        (USER, "Here is my schedule for March.\n\n[Attached: schedule.pdf, photo.png]"),
        (ASSISTANT, "Your schedule has four night shifts."),
    ]
    text = " ".join(t for _, t in said)
    for left_out in ("ABANDONED", "FIRST ANSWER", "TOOL OUTPUT", "print(2+2)", "nurse. Answer"):
        assert left_out not in text
    assert [m.at for m in chat.messages] == sorted(m.at for m in chat.messages)


def test_it_reads_a_chatgpt_zip_and_a_claude_export_with_its_memories(tmp_path):
    conversations = write_json(tmp_path / "c.json", [branched_chatgpt_conversation().as_dict()])
    chatgpt_zip = write_zip(
        tmp_path / "chatgpt.zip",
        {"conversations.json": conversations, "chat.html": "<html></html>", "user.json": "{}"},
    )
    claude = claude_conversation("Piano", "2024-05-06", [("I learn the piano.", "Lovely.")])
    claude_zip = write_zip(
        tmp_path / "claude.zip",
        {
            "data-2025/conversations.json": json.dumps([claude]),
            "data-2025/memories.json": json.dumps(
                claude_memories("**Work**\n- [2025-03-02] - Works as a nurse in Lyon\n")
            ),
        },
    )

    assert opening.open_export(chatgpt_zip).kind == CHATGPT
    assert [m.role for m in _chats(chatgpt_zip)[0].messages][:2] == [USER, ASSISTANT]
    export = opening.open_export(claude_zip)
    (chat,) = list(opening.chats(export))
    assert (export.kind, chat.title, [m.text for m in chat.messages]) == (
        CLAUDE,
        "Piano",
        ["I learn the piano.", "Lovely."],
    )
    memories = list(opening.memories(export))
    assert [(m.text, str(m.saved)) for m in memories] == [
        ("Works as a nurse in Lyon", "2025-03-02")
    ]


def test_it_reads_pasted_memories_dated_or_not(tmp_path):
    path = tmp_path / "memories.txt"
    path.write_text(
        "# What ChatGPT remembers\n\n[2025-03-02] - Lives in Lyon\n"
        "[March 4, 2025] - Prefers short answers\n- Has a sister, Ana\nPlays the piano\n",
        encoding="utf-8",
    )

    export = opening.open_export(path)

    assert export.kind == PASTED
    assert [(m.text, m.saved and m.saved.isoformat()) for m in opening.memories(export)] == [
        ("Lives in Lyon", "2025-03-02"),
        ("Prefers short answers", "2025-03-04"),
        ("Has a sister, Ana", None),
        ("Plays the piano", None),
    ]


def _bomb(tmp_path):
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", b"[" + b" " * 50_000_000 + b"]")
    return path


def _traversal(tmp_path):
    return write_zip(tmp_path / "t.zip", {"../../etc/conversations.json": "[]"})


def _write(name: str, data: bytes):
    def make(tmp_path):
        path = tmp_path / name
        path.write_bytes(data)
        return path

    return make


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (_bomb, "zip bomb"),
        (_traversal, "a path in the zip"),
        (lambda p: write_zip(p / "x.zip", {"chat.html": "<p>"}), "without conversations.json"),
        (_write("half.json", b'[{"mapping": {}, "title": "cut'), "not JSON"),
        (_write("object.json", b'{"conversations": []}'), "JSON object"),
        (_write("other.json", b'[{"role": "user"}]'), "something else"),
        (_write("binary.bin", bytes(range(256)) * 10), "neither an export nor UTF-8 text"),
        (_write("empty.json", b"[]"), "no conversations"),
    ],
)
def test_it_refuses_a_damaged_or_hostile_file_saying_what_is_wrong(tmp_path, make, said):
    with pytest.raises(Damaged) as refused:
        _chats(make(tmp_path))
    assert said in refused.value.reason


@pytest.mark.parametrize(
    ("title", "said"),
    [(b"\\u0000NUL", "cannot be stored"), (b"\xed\xa0\x80 alone", "not UTF-8")],
    ids=["nul", "surrogate bytes"],
)
def test_it_refuses_text_that_cannot_be_stored_naming_what(tmp_path, title, said):
    good = json.dumps(branched_chatgpt_conversation().as_dict()).encode()
    bad = good.replace(b'"Moving to Lyon"', b'"' + title + b'"')
    path = tmp_path / "c.json"
    path.write_bytes(b"[" + good + b"," + bad + b"]")

    with pytest.raises(Damaged) as refused:
        _chats(path)

    assert said in refused.value.reason
    if said == "cannot be stored":
        assert "conversation 2" in refused.value.reason


def test_a_lone_surrogate_escape_never_reaches_what_is_stored(tmp_path):
    tree = json.dumps(branched_chatgpt_conversation().as_dict()).replace(
        '"Moving to Lyon"', '"\\ud800 alone"'
    )
    path = tmp_path / "c.json"
    path.write_text(f"[{tree}]", encoding="utf-8")

    try:
        (chat,) = _chats(path)
    except Damaged as refused:  # the pure-Python parser hands the surrogate over
        assert "cannot be stored" in refused.reason
    else:  # the C parser reads it as "?"
        assert chat.title.encode("utf-8") == b"? alone"


def test_a_tree_that_loops_is_refused(tmp_path):
    tree = branched_chatgpt_conversation().as_dict()
    root = next(k for k, n in tree["mapping"].items() if n["parent"] is None)
    tree["mapping"][root]["parent"] = tree["current_node"]
    path = write_json(tmp_path / "c.json", [tree])

    with pytest.raises(Damaged) as refused:
        _chats(path)
    assert "loops" in refused.value.reason
