"""Login throttling (django-axes): a username+IP that keeps guessing is paused, then let back in."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from tests.fixtures.users import PASSWORD

LOGIN = "/accounts/login/"


def _log_in(client, password, username="alice", ip="127.0.0.1"):
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=ip)


def _guess_wrong(client, times, **kwargs):
    for _ in range(times):
        response = _log_in(client, "not-the-password", **kwargs)
        assert response.status_code == 200
        assert "didn't match" in response.content.decode()


def _reach_the_limit(client, limit, **kwargs):
    _guess_wrong(client, limit - 1, **kwargs)
    assert _log_in(client, "not-the-password", **kwargs).status_code == 429


def _is_logged_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_it_refuses_even_the_right_password_after_too_many_wrong_ones(client, alice, settings):
    _reach_the_limit(client, settings.AXES_FAILURE_LIMIT)

    response = _log_in(client, PASSWORD)

    assert response.status_code == 429
    page = response.content.decode()
    assert "Too many failed login attempts" in page
    minutes = round(settings.AXES_COOLOFF_TIME.total_seconds() / 60)
    assert f"Wait {minutes} minutes, then try again." in page
    assert '<main class="auth-card">' in page and "chat/chat.css" in page  # the app's own page
    assert not _is_logged_in(client)


def test_it_lets_the_right_password_in_once_the_cool_off_has_passed(client, alice, settings):
    _reach_the_limit(client, settings.AXES_FAILURE_LIMIT)
    assert _log_in(client, PASSWORD).status_code == 429
    assert not _is_logged_in(client)

    later = timezone.now() + settings.AXES_COOLOFF_TIME + timedelta(seconds=1)
    with time_machine.travel(later, tick=False):
        response = _log_in(client, PASSWORD)

    assert response.status_code == 302 and response["Location"] == "/"
    assert _is_logged_in(client)


def test_it_still_refuses_just_before_the_cool_off_ends(client, alice, settings):
    _reach_the_limit(client, settings.AXES_FAILURE_LIMIT)
    almost = timezone.now() + settings.AXES_COOLOFF_TIME - timedelta(seconds=30)
    with time_machine.travel(almost, tick=False):
        assert _log_in(client, PASSWORD).status_code == 429
    assert not _is_logged_in(client)


def test_it_forgets_the_wrong_guesses_after_a_successful_login(client, alice, settings):
    below_limit = settings.AXES_FAILURE_LIMIT - 1
    _guess_wrong(client, below_limit)
    assert _log_in(client, PASSWORD).status_code == 302
    client.post("/accounts/logout/")

    _guess_wrong(client, below_limit)  # without the reset, this would cross the limit
    assert _log_in(client, PASSWORD).status_code == 302
    assert _is_logged_in(client)


def test_it_locks_out_one_username_from_one_address_only(client, alice, bob, settings):
    _reach_the_limit(client, settings.AXES_FAILURE_LIMIT)
    assert _log_in(client, PASSWORD).status_code == 429

    assert _log_in(client, PASSWORD, username="bob").status_code == 302
    client.post("/accounts/logout/")
    assert _log_in(client, PASSWORD, ip="203.0.113.7").status_code == 302


@pytest.mark.parametrize("limit", [2, 7])
def test_it_takes_the_failure_limit_from_settings(client, alice, settings, limit):
    settings.AXES_FAILURE_LIMIT = limit
    _reach_the_limit(client, limit)
    assert _log_in(client, PASSWORD).status_code == 429


def test_it_leaves_sign_up_and_test_logins_working(client, alice, settings):
    _reach_the_limit(client, settings.AXES_FAILURE_LIMIT)

    response = client.post(
        "/accounts/signup/",
        {"username": "carol", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 302 and _is_logged_in(client)
    client.post("/accounts/logout/")
    # Client.login authenticates with no request: there is no address to throttle.
    assert client.login(username="bob", password="wrong") is False
    assert client.login(username="alice", password=PASSWORD) is True
