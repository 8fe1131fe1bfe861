"""An answer a dead process left "streaming" is settled wherever it stands in the conversation,
not only when it is the last message: shown stopped on the page (which writes nothing), and
settled when the page's socket connects or the chat goes on."""

import socket
import subprocess
from datetime import timedelta

import pytest
from django.utils import timezone

from chat import services, streaming
from chat.models import Conversation, Message

pytestmark = pytest.mark.django_db


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def conversation_with_an_orphan_in_the_middle(user, **owner):
    conversation = Conversation.objects.create(user=user, title="Trip")
    Message.objects.create(conversation=conversation, role="user", content="First question")
    orphan = Message.objects.create(
        conversation=conversation,
        role="assistant",
        content="Half an ans",
        status="streaming",
        stream_token="gone",
        **owner,
    )
    Message.objects.create(conversation=conversation, role="user", content="Second question")
    Message.objects.create(conversation=conversation, role="assistant", content="A whole answer")
    return conversation, orphan


@pytest.mark.parametrize("owner", ["dead_pid", "stale_heartbeat"])
def test_the_page_shows_an_abandoned_answer_in_the_middle_as_stopped_and_writes_nothing(
    alice_client, alice, settings, owner
):
    settings.CHAT_STREAM_STALE_AFTER = 60
    if owner == "dead_pid":
        fields = {"stream_host": socket.gethostname(), "stream_pid": dead_pid()}
        fields["stream_heartbeat"] = timezone.now()
    else:
        fields = {"stream_host": "another-machine", "stream_pid": 4242}
        fields["stream_heartbeat"] = timezone.now() - timedelta(seconds=61)
    conversation, orphan = conversation_with_an_orphan_in_the_middle(alice, **fields)

    page = alice_client.get(f"/c/{conversation.pk}/").content.decode()

    orphan.refresh_from_db()
    assert (orphan.status, orphan.content) == ("streaming", "Half an ans")  # a GET writes nothing
    assert f'id="message-{orphan.pk}"' in page
    assert 'data-status="streaming"' not in page
    assert 'class="stopped' in page  # shown stopped, with Retry

    settled = streaming.settle_abandoned_in(conversation.pk)  # what the page's socket does
    assert settled == [orphan.pk]


def test_a_live_writers_answer_in_the_middle_is_left_alone(alice_client, alice):
    conversation, theirs = conversation_with_an_orphan_in_the_middle(
        alice,
        stream_host="another-machine",
        stream_pid=4242,
        stream_heartbeat=timezone.now(),
    )
    alice_client.get(f"/c/{conversation.pk}/")
    theirs.refresh_from_db()
    assert theirs.status == "streaming"


def test_sending_a_message_settles_an_abandoned_answer_before_it(alice):
    conversation, orphan = conversation_with_an_orphan_in_the_middle(
        alice, stream_host=socket.gethostname(), stream_pid=dead_pid(), stream_heartbeat=None
    )
    services.message_send(conversation=conversation, content="Third question")
    orphan.refresh_from_db()
    assert orphan.status == "stopped"
