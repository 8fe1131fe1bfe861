"""/memory/...: the memory's HTML fragments (memory/panel_views.py) and settings page."""

from django.urls import path

from memory import panel_views
from memory.profile_views import profile_page
from memory.settings_views import memory_settings

urlpatterns = [
    path("settings/", memory_settings, name="memory-settings"),
    path("profile/", profile_page, name="memory-profile"),
    path("indicator", panel_views.indicator, name="memory-indicator"),
    path("search", panel_views.search, name="memory-search"),
    path("m/<str:memory_id>", panel_views.detail, name="memory-detail"),
    path("save/<int:conversation_id>", panel_views.save_conversation, name="memory-save"),
]
