from django.urls import path

from chat.consumers import ChatConsumer, UserEventsConsumer

websocket_urlpatterns = [
    path("ws/conversations/<int:pk>/", ChatConsumer.as_asgi()),
    path("ws/events/", UserEventsConsumer.as_asgi()),
]
