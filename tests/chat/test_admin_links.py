"""Every link of the admin's index answers: none is a 500 (the Django-RQ dashboard needs
Redis, so without REDIS_URL it is not offered)."""

import os
import re

import pytest
from django.test import Client

from tests.fixtures.manage_py import manage


@pytest.fixture
def admin_client(db, django_user_model):
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw-123456")
    client = Client(raise_request_exception=False)
    client.force_login(admin)
    return client


def test_no_admin_link_answers_500_without_redis(admin_client, settings):
    assert not settings.REDIS_URL
    index = admin_client.get("/admin/")
    links = sorted(set(re.findall(r'href="(/admin/[^"#?]*)"', index.content.decode())))
    assert "/admin/chat/conversation/" in links  # the index was read

    answers = {link: admin_client.get(link).status_code for link in links}

    assert {link: code for link, code in answers.items() if code >= 500} == {}
    assert not any("django_rq" in link for link in links)


ADMIN_WITH_REDIS = """
from django.contrib.auth import get_user_model
from django.test import Client
admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw-123456")
client = Client(raise_request_exception=False)
client.force_login(admin)
index = client.get("/admin/").content.decode()
print("linked" if "/admin/django_rq/dashboard/" in index else "not linked")
print(client.get("/admin/django_rq/dashboard/").status_code)
"""


def test_with_redis_the_django_rq_link_is_offered_and_answers(redis_server, tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "REDIS_URL": redis_server.url,
    }
    manage(env, "migrate", "--noinput")
    said = manage(env, "shell", "-c", ADMIN_WITH_REDIS).strip().splitlines()
    assert said[-2:] == ["linked", "200"]
