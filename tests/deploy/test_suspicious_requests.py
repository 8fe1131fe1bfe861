"""A request Django refuses as suspicious (a POST with more than DATA_UPLOAD_MAX_NUMBER_FIELDS
fields) is a clean 400 and one line in the log, never a traceback: anyone can send one, not
logged in too. The production app (Daphne, DEBUG off), its log read as an operator would."""

from __future__ import annotations

FIELDS = 1500  # past Django's default DATA_UPLOAD_MAX_NUMBER_FIELDS (1000)
SAID = "exceeded settings.DATA_UPLOAD_MAX_NUMBER_FIELDS"


def _many_fields() -> str:
    return "&".join(f"f{i}=x" for i in range(FIELDS))


def test_a_post_with_too_many_fields_is_a_400_and_one_log_line(production_server):
    origin = f"https://127.0.0.1:{production_server.port}"
    with production_server.https() as client:
        token = client.get("/accounts/login/").cookies["csrftoken"]
        client.cookies.clear()  # Secure cookies: sent by hand over the test's plain HTTP
        # A form from the app's own origin, as a browser's: the CSRF check reads its fields.
        form = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": f"csrftoken={token}",
            "Origin": origin,
            "Referer": origin + "/",
        }
        page = client.post("/accounts/login/", content=_many_fields(), headers=form)
        api = client.post("/api/conversations", content=_many_fields(), headers=form)

    log = production_server.log.read_text()
    assert page.status_code == 400 and "Traceback" not in page.text, log[-3000:]
    assert api.status_code == 400
    assert api.json() == {"error": {"field": None, "reason": "bad request"}}
    lines = [line for line in log.splitlines() if SAID in line]
    assert len(lines) == 2, log[-3000:]
    assert "POST /accounts/login/" in lines[0] and "POST /api/conversations" in lines[1]
    assert "Traceback" not in log, log[-3000:]
