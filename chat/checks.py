"""System checks of the site's own settings (run by `manage.py check`, `migrate`, and
`check --deploy`; ikario_clone/asgi.py runs them too, so Daphne refuses to start)."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Tags, register

ANY_HOST = "ikario.E001"


@register(Tags.security)
def any_host_in_production(app_configs=None, **kwargs) -> list[Error]:
    """ALLOWED_HOSTS='*' in production: every Host header is served, so the WebSocket origin
    check (core/origins.py) and Django's own CSRF origin check would take any site
    that names itself in Host as the app's own origin."""
    if settings.DEBUG or "*" not in settings.ALLOWED_HOSTS:
        return []
    return [
        Error(
            "ALLOWED_HOSTS contains '*' in production (DEBUG is off).",
            hint="List the host names the app is served on, e.g. ALLOWED_HOSTS=ikario.example.com.",
            id=ANY_HOST,
        )
    ]
