"""One import at a time per user, with requests arriving together through Daphne: of six
simultaneous imports one is accepted (202), the others refused (429) (memory/client/jobs.py)."""

from __future__ import annotations

import concurrent.futures
import json

import httpx

from tests.fixtures.browser import AppServer
from tests.net import stop


def test_six_simultaneous_imports_of_one_user_start_one_job():
    server = AppServer().start()
    try:
        # No worker: the first job stays queued, so a second accepted could only be the race.
        stop(server.worker)
        server.worker = None
        code = (
            "from django.contrib.auth import get_user_model, SESSION_KEY, BACKEND_SESSION_KEY, "
            "HASH_SESSION_KEY; from django.contrib.sessions.backends.db import SessionStore; "
            "u = get_user_model().objects.create_user('alice', password='pw-not-used-1'); "
            "s = SessionStore(); s[SESSION_KEY] = str(u.pk); "
            "s[BACKEND_SESSION_KEY] = 'django.contrib.auth.backends.ModelBackend'; "
            "s[HASH_SESSION_KEY] = u.get_session_auth_hash(); s.create(); print(s.session_key)"
        )
        session = server.manage("shell", "-c", code).split()[-1]
        cookies = {"sessionid": session}
        with httpx.Client(base_url=server.url, cookies=cookies, timeout=60) as client:
            assert client.get("/memory/").status_code == 200  # a CSRF cookie
            token = client.cookies["csrftoken"]
        memories = [{"content": f"Imported note {i}"} for i in range(20)]
        data = json.dumps({"format": "ikario-memories", "version": 1, "memories": memories})

        def upload(_n: int) -> int:
            with httpx.Client(base_url=server.url, cookies=cookies, timeout=60) as one:
                one.cookies.set("csrftoken", token)
                files = {"file": ("m.json", data.encode(), "application/json")}
                headers = {"X-CSRFToken": token}
                return one.post("/memory/import", files=files, headers=headers).status_code

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            got = sorted(pool.map(upload, range(6)))
        assert got == [202, 429, 429, 429, 429, 429]
        jobs = server.manage(
            "shell", "-c", "from memory.models import MemoryJob; print(MemoryJob.objects.count())"
        )
        assert jobs.split()[-1] == "1"
    finally:
        server.stop()
