"""ASGI entry point: HTTP through Django, WebSockets through Channels (served by Daphne).

Importing it starts nothing but Django: the background worker (`manage.py db_worker`) and
the memory server are processes of their own (`make run`'s Procfile), and this process's
memory client connects when Daphne serves (ikario_clone/web.py) or on its first call.
"""

import os
import sys

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ikario_clone.settings")
# Django must be set up before the routing imports consumers and models.
django_asgi_app = get_asgi_application()

from django.conf import settings  # noqa: E402
from django.core.exceptions import ImproperlyConfigured  # noqa: E402

from chat.checks import any_host_in_production  # noqa: E402

# Daphne runs no system checks: a setting production must refuse stops the app here.
for error in any_host_in_production():
    raise ImproperlyConfigured(f"{error.msg} {error.hint}")

if settings.DEBUG:
    # Development under plain `daphne`: serve the source static files (htmx, CSS) as
    # runserver would, with no collectstatic. Production collects them and ServeStatic
    # serves them from the middleware (settings.py).
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    django_asgi_app = ASGIStaticFilesHandler(django_asgi_app)

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from chat.routing import websocket_urlpatterns as chat_sockets  # noqa: E402
from core.errors import SocketOutage  # noqa: E402
from core.limits import RequestLimits  # noqa: E402
from core.origins import SameOriginValidator  # noqa: E402
from ikario_clone.fair_shares import FairShares  # noqa: E402
from memory.routing import websocket_urlpatterns as memory_sockets  # noqa: E402

if "daphne.server" in sys.modules:
    # Served by Daphne: a body past the limit is refused before Daphne buffers it.
    from ikario_clone import daphne_limits

    daphne_limits.install()

application = ProtocolTypeRouter(
    {
        # URLs and bodies bounded before Django reads them (limits.py).
        "http": RequestLimits(django_asgi_app),
        # The page's origin must be the app's own: scheme, host and port (origins.py). A
        # database outage refuses or closes the socket, one line logged (errors.py).
        "websocket": SameOriginValidator(
            SocketOutage(AuthMiddlewareStack(URLRouter([*chat_sockets, *memory_sockets])))
        ),
    }
)

# Every way in (pages, partials, the API, the socket) within its user's or address's fair
# share before Django or a consumer is reached (fair_shares.py).
application = FairShares(application)
