"""/memory/...: the memory page and its fragments, the widgets (memory/web/panels.py),
the settings and profile pages."""

from django.urls import path

from memory.web import controls, facts, health, notes, page, panels, recall, tools
from memory.web.profile import profile_page
from memory.web.review import answer_sources, inbox
from memory.web.settings import memory_settings

urlpatterns = [
    path("", page.memory_page, name="memory-page"),
    path("counts", page.counts, name="memory-counts"),
    path("profile/inline", page.profile_inline, name="memory-profile-inline"),
    path("m/<str:memory_id>/card", page.card, name="memory-card"),
    path("m/<str:memory_id>/edit", page.edit, name="memory-edit"),
    path("m/<str:memory_id>/delete", page.delete, name="memory-delete"),
    path("m/<str:memory_id>/undo", page.undo, name="memory-undo"),
    path("m/<str:memory_id>/gone", page.gone, name="memory-gone"),
    path("facts/add", facts.add_fact, name="memory-add-fact"),
    path("recall-settings", facts.recall_sliders, name="memory-recall-sliders"),
    path("forget", tools.forget, name="memory-forget"),
    path("forget/undo", tools.forget_undo, name="memory-forget-undo"),
    path("forget/gone", page.gone, name="memory-forget-gone"),
    path("consistency", tools.consistency, name="memory-consistency"),
    path("trace", tools.trace, name="memory-trace"),
    path("export", tools.export, name="memory-export"),
    path("import", tools.import_file, name="memory-import"),
    path("import/history", tools.import_history, name="memory-import-history"),
    path("jobs/<int:job_id>", tools.job, name="memory-job"),
    path("health", health.report, name="memory-health"),
    path("health/clean", health.clean, name="memory-health-clean"),
    path("health/undo", health.undo, name="memory-health-undo"),
    path("health/gone", page.gone, name="memory-health-gone"),
    path("controls", controls.switch, name="memory-controls"),
    path("reset", controls.reset, name="memory-reset"),
    path(
        "conversation/<int:conversation_id>/switch",
        controls.conversation_switch,
        name="memory-conversation-switch",
    ),
    path("recall/<int:message_id>", recall.recall, name="memory-recall"),
    path("recall/log/<int:retrieval_id>", recall.logged_recall, name="memory-logged-recall"),
    path(
        "sources/chat/<int:conversation_id>",
        answer_sources.conversation_sources,
        name="memory-conversation-sources",
    ),
    path(
        "sources/<str:scope>/<int:scope_id>/<str:memory_id>/",
        answer_sources.source,
        name="memory-source",
    ),
    path(
        "sources/<str:scope>/<int:scope_id>/<str:memory_id>/not-relevant",
        answer_sources.mark_not_relevant,
    ),
    path(
        "sources/<str:scope>/<int:scope_id>/<str:memory_id>/relevant",
        answer_sources.mark_relevant,
    ),
    path("sources/<str:scope>/<int:scope_id>/<str:memory_id>/correct", answer_sources.correct),
    path("sources/<str:scope>/<int:scope_id>/<str:memory_id>/delete", answer_sources.delete),
    path("sources/<str:scope>/<int:scope_id>/<str:memory_id>/undo", answer_sources.undo),
    path("inbox", inbox.section, name="memory-inbox"),
    path("inbox/<int:fact_id>/accept", inbox.accept, name="memory-inbox-accept"),
    path("inbox/<int:fact_id>/edit", inbox.edit, name="memory-inbox-edit"),
    path("inbox/<int:fact_id>/reject", inbox.reject, name="memory-inbox-reject"),
    path("settings/", memory_settings, name="memory-settings"),
    path("notes/", notes.section, name="memory-notes"),
    path("notes/settings", notes.notes_settings, name="memory-notes-settings"),
    path("notes/folder", notes.make_notes_folder, name="memory-notes-folder"),
    path("notes/sync", notes.sync_now, name="memory-notes-sync"),
    path("profile/", profile_page, name="memory-profile"),
    path("indicator", panels.indicator, name="memory-indicator"),
    path("search", panels.search, name="memory-search"),
    path("m/<str:memory_id>", panels.detail, name="memory-detail"),
    path("save/<int:conversation_id>", panels.save_conversation, name="memory-save"),
]
