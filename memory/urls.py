"""/api/memory/...: the memory's JSON API (memory/api/views.py)."""

from django.urls import path

from memory.api import views

app_name = "memory_api"

urlpatterns = [
    path("search", views.search, name="search"),
    path("add", views.add, name="add"),
    path("evolution", views.evolution, name="evolution"),
    path("consistency", views.consistency, name="consistency"),
    path("stats", views.stats, name="stats"),
    path("recent", views.recent, name="recent"),
    path("forget", views.forget, name="forget"),
    path("jobs/<int:job_id>", views.job, name="job"),
    path("settings", views.memory_settings, name="settings"),
    path("retrievals", views.retrievals, name="retrievals"),
    path("facts", views.facts, name="facts"),
    path("facts/<str:memory_id>", views.memory_detail, name="fact"),
    # Last: any other single segment is a memory id.
    path("<str:memory_id>", views.memory_detail, name="detail"),
]
