"""Extraction on the app's sample conversations (tests/fixtures/sample_conversations.py),
through the whole pipeline: backup -> learning jobs (save_conversation) -> the real `anthropic` SDK
against the fake Messages API -> add_thoughts into a real ikario_rag -> the profile.

The fake plays the small model with each sample exchange's annotated facts (the answer the
prompt asks for), so the figures measure the pipeline: how many facts per exchange reach
memory, how many are restatements caught by dedup, how many supersede an older fact. They
say nothing of a real model's judgement (no key, no network here).

Usage: .venv/bin/python bench/extraction_samples.py
"""

import sys
import tempfile

from _setup import ROOT, django_on_temp_db, memory_on

sys.path.insert(0, str(ROOT))
from tests.fixtures.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock  # noqa: E402
from tests.fixtures.sample_conversations import SAMPLES, facts_for  # noqa: E402


def main():
    index = tempfile.mkdtemp(prefix="ikario-bench-index-")
    with FakeAnthropic() as fake:
        fake.respond_with(
            lambda body: Reply(
                [
                    ToolUseBlock(
                        "record_facts",
                        {"facts": facts_for(body["messages"][0]["content"])},
                    )
                ],
                stop_reason="tool_use",
            )
        )
        django_on_temp_db(
            ANTHROPIC_BASE_URL=fake.base_url,
            ANTHROPIC_API_KEY="sk-bench",
            MCP_MEMORY_ENABLED="true",
            MEMORY_PROFILE_DEBOUNCE="0",
        )
        memory_on(index)
        from django.contrib.auth import get_user_model
        from django_tasks_db.models import DBTaskResult

        from memory.client import services
        from memory.learning.backup import backup_conversation
        from memory.models import SavedExchange, UserProfile
        from memory.worker import database
        from tests.fixtures.builders import add_message, make_conversation

        services.wait_until_ready(300)
        users = {}
        exchanges = 0
        for title, said in SAMPLES:
            name = "sam" if "(en)" in title else "camille"
            user = users.get(name) or get_user_model().objects.create_user(name)
            users[name] = user
            chat = make_conversation(user, title)
            for question, answer, _ in said:
                # One exchange at a time, as auto-save meets them: each sees the facts before.
                add_message(chat, question)
                add_message(chat, answer, role="assistant")
                backup_conversation(chat)
                database.run_ready_tasks()
                exchanges += 1
        runs = [
            r.return_value
            for r in DBTaskResult.objects.filter(task_path__endswith="save_conversation")
            if r.status == "SUCCESSFUL" and "facts" in (r.return_value or {})
        ]
        proposed = sum(r["facts"] for r in runs)
        changed = sum(r.get("changed", 0) for r in runs)
        kinds = ["fact", "preference", "goal", "self"]
        stored = sum(
            len(services.get_recent_memories(user=u, limit=100, kinds=kinds)["memories"])
            for u in users.values()
        )
        with_facts = SavedExchange.objects.filter(facts__gt=0).count()
        print(f"{exchanges} sample exchanges ({len(SAMPLES)} conversations, English and French)")
        print(
            f"  facts proposed   : {proposed} ({proposed / exchanges:.2f} per exchange; "
            f"{with_facts} exchanges taught something, {exchanges - with_facts} nothing)"
        )
        print(f"  created/updated  : {changed} (the rest were exact restatements: duplicates)")
        print(
            f"  facts in memory  : {stored} ({stored / exchanges:.2f} per exchange, after dedup "
            "and supersession)"
        )
        for name, user in users.items():
            print(f"  profile of {name}:")
            for line in UserProfile.objects.get(user=user).text.splitlines():
                print(f"    {line}")


if __name__ == "__main__":
    main()
