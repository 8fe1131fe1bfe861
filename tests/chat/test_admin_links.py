"""Every link of the admin's index answers: none is a 500."""

import re

import pytest
from django.test import Client


@pytest.fixture
def admin_client(db, django_user_model):
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw-123456")
    client = Client(raise_request_exception=False)
    client.force_login(admin)
    return client


def test_no_admin_link_answers_500(admin_client):
    index = admin_client.get("/admin/")
    links = sorted(set(re.findall(r'href="(/admin/[^"#?]*)"', index.content.decode())))
    assert "/admin/chat/conversation/" in links  # the index was read

    answers = {link: admin_client.get(link).status_code for link in links}

    assert {link: code for link, code in answers.items() if code >= 500} == {}
