"""/api/memory/...: the memory's JSON API (memory/api.py)."""

from django.urls import path

from memory import api

app_name = "memory_api"

urlpatterns = [
    path("search", api.search, name="search"),
    path("add", api.add, name="add"),
    path("evolution", api.evolution, name="evolution"),
    path("consistency", api.consistency, name="consistency"),
    path("stats", api.stats, name="stats"),
    path("recent", api.recent, name="recent"),
    path("forget", api.forget, name="forget"),
    path("jobs/<int:job_id>", api.job, name="job"),
    path("settings", api.memory_settings, name="settings"),
    path("retrievals", api.retrievals, name="retrievals"),
    path("facts", api.facts, name="facts"),
    path("facts/<str:memory_id>", api.memory_detail, name="fact"),
    # Last: any other single segment is a memory id.
    path("<str:memory_id>", api.memory_detail, name="detail"),
]
