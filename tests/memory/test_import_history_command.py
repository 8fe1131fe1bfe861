"""manage.py import_history --user NAME FILE: the format found by reading the file, exit 0
with a summary when done, a clear message and a non-zero exit for a damaged file, never a
traceback."""

from __future__ import annotations

import json
from contextlib import redirect_stderr, redirect_stdout
from io import StringIO

import pytest
from django.core.management import ManagementUtility

from chat.models import Conversation
from memory.models import MemoryJob
from tests.fixtures.exports import (
    branched_chatgpt_conversation,
    claude_conversation,
    write_json,
    write_zip,
)


def manage(*args):
    """The command as an operator runs it: (exit status, stdout, stderr)."""
    out, err, status = StringIO(), StringIO(), 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            ManagementUtility(["manage.py", *args]).execute()
        except SystemExit as exit:
            status = exit.code
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def rules_learn(settings):
    settings.ANTHROPIC_API_KEY = ""


def test_it_imports_a_chatgpt_zip_and_says_what_it_did(memory_server, rules_learn, alice, tmp_path):
    conversations = write_json(tmp_path / "c.json", [branched_chatgpt_conversation().as_dict()])
    export = write_zip(tmp_path / "export.zip", {"conversations.json": conversations})
    status, out, _ = manage("import_history", "--user", "alice", str(export))

    assert status == 0
    assert "From ChatGPT: 1 chats (1 new, 0 already here)" in out
    assert "kept out as secrets." in out
    assert Conversation.objects.get(user=alice).source == "chatgpt"
    assert export.exists()  # the operator's own file is left where it was
    assert MemoryJob.objects.get(user=alice).state == "done"


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b'[{"chat_messages": [], "uuid": "x"', "is not JSON we can read"),
        (b'{"not": "a list"}', "a JSON object, where a list of conversations was expected"),
        (b"PK\x03\x04 not really a zip", "is a damaged zip"),
        (b"plain text \x01\x02 with control bytes", "is neither an export nor UTF-8 text"),
    ],
)
def test_a_damaged_file_exits_non_zero_with_what_is_wrong_and_no_traceback(
    tmp_path, alice, content, said
):
    path = tmp_path / "export.json"
    path.write_bytes(content)

    status, out, err = manage("import_history", "--user", "alice", str(path))

    assert status != 0
    assert said in err
    assert "Traceback" not in err + out


def test_a_claude_export_damaged_further_in_is_refused_and_nothing_stored(
    memory_server, rules_learn, alice, tmp_path
):
    good = claude_conversation("Piano", "2024-05-06", [("I learn the piano.", "Nice.")])
    bad = dict(good, uuid="second", created_at="not a date")
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([good, bad]))

    status, _, err = manage("import_history", "--user", "alice", str(path))

    assert status != 0 and "conversation 2: no created_at" in err
    assert not Conversation.objects.filter(user=alice).exists()


def test_an_unknown_user_or_file_is_said_plainly(tmp_path, alice):
    status, _, err = manage("import_history", "--user", "nobody", str(tmp_path / "x.json"))
    assert status != 0 and "No user 'nobody'" in err
    status, _, err = manage("import_history", "--user", "alice", str(tmp_path / "x.json"))
    assert status != 0 and "no such file" in err
