from django.urls import path

from memory.settings_views import memory_settings

urlpatterns = [
    path("settings/", memory_settings, name="memory-settings"),
]
