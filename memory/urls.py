"""/api/memory/...: the memory's JSON API (memory/views.py)."""

from django.urls import path

from memory import views

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
    # Last: any other single segment is a memory id.
    path("<str:memory_id>", views.memory_detail, name="detail"),
]
