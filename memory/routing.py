"""The memory's WebSocket routes, wired into the app by ikario_clone/asgi.py."""

from django.urls import path

from memory.web.consumers import MemoryPageConsumer

websocket_urlpatterns = [
    path("ws/memory/", MemoryPageConsumer.as_asgi()),
]
