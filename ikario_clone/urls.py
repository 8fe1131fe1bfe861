from django.contrib import admin
from django.urls import include, path

from core import health
from ikario_clone import api

urlpatterns = [
    path("admin/", admin.site.urls),
    # For the proxy and the process manager: no login (core/health.py).
    path("health/live", health.live, name="health-live"),
    path("health/ready", health.ready, name="health-ready"),
    # Django's set_language: the Settings page's language switch posts here.
    path("i18n/", include("django.conf.urls.i18n")),
    path("accounts/", include("chat.account_urls")),
    # The JSON API: conversations and memory, its OpenAPI document at /api/openapi.json.
    path("api/", api.urls()),
    path("memory/", include("memory.web.urls")),
    path("", include("chat.urls")),
]

handler400 = "core.errors.bad_request"
handler404 = "core.errors.page_not_found"
handler500 = "core.errors.server_error"
