"""The app's URLs plus two views that fail, for the error-page tests."""

from django.urls import path

from ikario_clone.urls import handler404, handler500
from ikario_clone.urls import urlpatterns as app_urlpatterns

__all__ = ["handler404", "handler500", "urlpatterns"]


def broken(request):
    raise RuntimeError("secret detail: /srv/ikario/db.sqlite3 pid 4242")


urlpatterns = [path("broken/", broken), path("api/broken", broken), *app_urlpatterns]
