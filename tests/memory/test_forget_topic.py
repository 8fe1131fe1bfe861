"""Forget a topic on /memory (issue 23): a confirmation deletes exactly what was previewed
for the topic shown, never what another topic's preview listed; a forget can be undone for
as long as a delete can."""

from datetime import timedelta

from django.utils import timezone

from memory.client import services
from memory.models import DeletedMemory


def _add(user, content):
    return services.add_thought(user=user, content=content)["id"]


def _contents(user):
    return sorted(m["content"] for m in services.list_memories(user=user)["memories"])


def test_a_new_topic_discards_the_preview_of_the_last_one(memory_server, alice, alice_client):
    cats = _add(alice, "Alice has two cats, Miso and Tofu")
    _add(alice, "Alice drives an old Toyota Corolla")

    preview = alice_client.post("/memory/forget", {"topic": "cats"}).content.decode()
    assert "Miso and Tofu" in preview and f'value="{cats}"' in preview

    # The form as the browser sends it once the topic is changed and Enter pressed:
    # the cats preview's hidden fields, a new topic.
    answer = alice_client.post(
        "/memory/forget",
        {"topic": "Toyota", "previewed": "cats", "confirm": "1", "ids": [cats]},
    ).content.decode()

    assert "forgotten" not in answer
    assert "Toyota Corolla" in answer  # what Toyota would delete, to confirm in turn
    assert _contents(alice) == [
        "Alice drives an old Toyota Corolla",
        "Alice has two cats, Miso and Tofu",
    ]


def test_a_confirmation_with_ids_its_topic_does_not_find_deletes_nothing(
    memory_server, alice, alice_client
):
    cats = _add(alice, "Alice has two cats, Miso and Tofu")
    _add(alice, "Alice drives an old Toyota Corolla")

    answer = alice_client.post(
        "/memory/forget",
        {"topic": "Toyota", "previewed": "Toyota", "confirm": "1", "ids": [cats]},
    ).content.decode()

    assert "forgotten" not in answer and "Nothing was deleted" in answer
    assert "Toyota Corolla" in answer  # what Toyota finds, to confirm in turn
    assert "Alice has two cats, Miso and Tofu" in _contents(alice)


def test_a_confirmation_deletes_what_was_previewed(memory_server, alice, alice_client):
    cats = _add(alice, "Alice has two cats, Miso and Tofu")
    _add(alice, "Alice drives an old Toyota Corolla")

    preview = alice_client.post("/memory/forget", {"topic": "cats"}).content.decode()
    assert 'name="previewed" value="cats"' in preview
    done = alice_client.post(
        "/memory/forget", {"topic": "cats", "previewed": "cats", "confirm": "1", "ids": [cats]}
    ).content.decode()

    assert "1 memory about “cats” forgotten." in done
    assert _contents(alice) == ["Alice drives an old Toyota Corolla"]


def _forget(client, topic, ids):
    return client.post(
        "/memory/forget", {"topic": topic, "previewed": topic, "confirm": "1", "ids": ids}
    )


def test_a_forget_is_undone_like_a_delete(memory_server, alice, alice_client, settings):
    settings.MEMORY_UNDO_SECONDS = 7
    cats = _add(alice, "Alice has two cats, Miso and Tofu")
    services.update_memory(user=alice, memory_id=cats, content="Alice has two cats, Miso and Udon")
    _add(alice, "Alice drives an old Toyota Corolla")

    done = _forget(alice_client, "cats", [cats]).content.decode()
    assert "/memory/forget/undo" in done and 'hx-trigger="load delay:7s"' in done
    assert _contents(alice) == ["Alice drives an old Toyota Corolla"]

    undone = alice_client.post("/memory/forget/undo", {"ids": [cats]})

    assert "1 memory put back." in undone.content.decode()
    assert "memory-list-changed" in undone.headers["HX-Trigger"]
    back = services.get_memory(user=alice, memory_id=cats)  # the same id, its history too
    assert back["content"] == "Alice has two cats, Miso and Udon"
    record = services.get_memories(user=alice, ids=[cats], with_history=True)["memories"][0]
    assert [h["content"] for h in record["history"]] == ["Alice has two cats, Miso and Tofu"]
    assert not DeletedMemory.objects.exists()


def test_a_forget_is_for_good_once_the_undo_window_is_over(
    memory_server, alice, alice_client, settings
):
    settings.MEMORY_UNDO_SECONDS = 5
    cats = _add(alice, "Alice has two cats, Miso and Tofu")
    _forget(alice_client, "cats", [cats])
    DeletedMemory.objects.update(deleted_at=timezone.now() - timedelta(seconds=6))

    late = alice_client.post("/memory/forget/undo", {"ids": [cats]}).content.decode()
    alice_client.post("/memory/forget/gone", {"ids": [cats]})

    assert "Too late to undo" in late
    assert _contents(alice) == []
    assert not DeletedMemory.objects.exists()


def test_bob_cannot_undo_alices_forget(memory_server, alice, alice_client, bob_client):
    cats = _add(alice, "Alice has two cats, Miso and Tofu")
    _forget(alice_client, "cats", [cats])

    answer = bob_client.post("/memory/forget/undo", {"ids": [cats]}).content.decode()

    assert "Too late to undo" in answer
    assert _contents(alice) == []
    assert DeletedMemory.objects.filter(memory_id=cats).exists()  # alice's Undo still can


def test_a_bad_undo_is_named_and_changes_nothing(memory_server, alice, alice_client):
    answer = alice_client.post("/memory/forget/undo", {"ids": ["../../etc"]})
    assert answer.status_code == 400 and "ids" in answer.content.decode()
    answer = alice_client.post("/memory/forget/undo", {})
    assert answer.status_code == 400


def test_a_confirmation_deletes_exactly_what_was_previewed_not_what_came_since(
    memory_server, alice, alice_client
):
    cats = _add(alice, "Alice has two cats, Miso and Tofu")
    alice_client.post("/memory/forget", {"topic": "cats"})
    later = _add(alice, "Alice adopted a third cat, Udon")

    done = _forget(alice_client, "cats", [cats]).content.decode()

    assert "1 memory about “cats” forgotten." in done
    assert _contents(alice) == ["Alice adopted a third cat, Udon"]
    assert services.get_memory(user=alice, memory_id=later)


def test_a_preview_edited_since_is_shown_again_not_deleted(memory_server, alice, alice_client):
    cats = _add(alice, "Alice has two cats, Miso and Tofu")
    alice_client.post("/memory/forget", {"topic": "cats"})
    services.update_memory(user=alice, memory_id=cats, content="Alice sold her old Toyota")

    answer = _forget(alice_client, "cats", [cats]).content.decode()

    assert "Nothing was deleted" in answer and "forgotten" not in answer
    assert _contents(alice) == ["Alice sold her old Toyota"]
