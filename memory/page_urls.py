"""/memory/...: the memory page and its fragments, the widgets (memory/panel_views.py),
the settings and profile pages."""

from django.urls import path

from memory import (
    control_views,
    fact_views,
    health_views,
    notes_views,
    page_views,
    panel_views,
    recall_views,
    tool_views,
)
from memory.profile_views import profile_page
from memory.settings_views import memory_settings

urlpatterns = [
    path("", page_views.memory_page, name="memory-page"),
    path("counts", page_views.counts, name="memory-counts"),
    path("profile/inline", page_views.profile_inline, name="memory-profile-inline"),
    path("m/<str:memory_id>/card", page_views.card, name="memory-card"),
    path("m/<str:memory_id>/edit", page_views.edit, name="memory-edit"),
    path("m/<str:memory_id>/delete", page_views.delete, name="memory-delete"),
    path("m/<str:memory_id>/undo", page_views.undo, name="memory-undo"),
    path("m/<str:memory_id>/gone", page_views.gone, name="memory-gone"),
    path("facts/add", fact_views.add_fact, name="memory-add-fact"),
    path("recall-settings", fact_views.recall_sliders, name="memory-recall-sliders"),
    path("forget", tool_views.forget, name="memory-forget"),
    path("forget/undo", tool_views.forget_undo, name="memory-forget-undo"),
    path("forget/gone", tool_views.forget_gone, name="memory-forget-gone"),
    path("consistency", tool_views.consistency, name="memory-consistency"),
    path("trace", tool_views.trace, name="memory-trace"),
    path("export", tool_views.export, name="memory-export"),
    path("import", tool_views.import_file, name="memory-import"),
    path("jobs/<int:job_id>", tool_views.job, name="memory-job"),
    path("health", health_views.report, name="memory-health"),
    path("health/clean", health_views.clean, name="memory-health-clean"),
    path("health/undo", health_views.undo, name="memory-health-undo"),
    path("health/gone", health_views.gone, name="memory-health-gone"),
    path("controls", control_views.switch, name="memory-controls"),
    path("reset", control_views.reset, name="memory-reset"),
    path(
        "conversation/<int:conversation_id>/switch",
        control_views.conversation_switch,
        name="memory-conversation-switch",
    ),
    path("recall/<int:message_id>", recall_views.recall, name="memory-recall"),
    path("recall/log/<int:retrieval_id>", recall_views.logged_recall, name="memory-logged-recall"),
    path("settings/", memory_settings, name="memory-settings"),
    path("notes/", notes_views.section, name="memory-notes"),
    path("notes/settings", notes_views.notes_settings, name="memory-notes-settings"),
    path("notes/folder", notes_views.make_notes_folder, name="memory-notes-folder"),
    path("notes/sync", notes_views.sync_now, name="memory-notes-sync"),
    path("profile/", profile_page, name="memory-profile"),
    path("indicator", panel_views.indicator, name="memory-indicator"),
    path("search", panel_views.search, name="memory-search"),
    path("m/<str:memory_id>", panel_views.detail, name="memory-detail"),
    path("save/<int:conversation_id>", panel_views.save_conversation, name="memory-save"),
]
