"""ASGI entry point: HTTP through Django, WebSockets through Channels (served by Daphne)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ikario_clone.settings")
# Django must be set up before the routing imports consumers and models.
django_asgi_app = get_asgi_application()

# A local-first app run by plain `daphne`: serve static files (htmx, CSS) from the app
# itself, as runserver would, so no collectstatic or separate web server is needed.
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

django_asgi_app = ASGIStaticFilesHandler(django_asgi_app)

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from chat.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
