"""The header indicator says "saving fails: <why>" when the memory server is connected but a
save would fail (here its index directory removed under it), instead of "connected"."""

from __future__ import annotations

import shutil

from django.urls import reverse

from memory.client import services


def test_the_indicator_says_saving_fails_and_why(own_memory_server, tmp_path, alice, alice_client):
    # A server of this test's own (its own index): the session's shared one stays whole.
    own_memory_server(tmp_path / "index")
    assert services.wait_until_ready(timeout=180) == "connected"
    assert services.memory_stats(user=alice)["status"] == "connected"

    shutil.rmtree(tmp_path / "index")

    stats = services.memory_stats(user=alice)
    assert stats["status"] == "saving_fails"
    assert stats["error"] == (
        "saving fails: the index directory was removed; restart the memory server"
    )
    page = alice_client.get(reverse("memory-indicator")).content.decode()
    assert "status-saving_fails" in page
    assert "Saving fails: the index directory was removed" in page
    assert "Memory: saving fails" in page
