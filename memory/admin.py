"""Django admin for what the memory touches: conversations and their backups, the
memory settings, the retrieval log, and the memory's health (staff only: the server's
`health` object and the client's last connection error, which users never see). Memories
themselves live in ikario_rag and are browsed through the app (sidebar panel) or
`manage.py memory_search`.
"""

import json

from django.contrib import admin, messages
from django.db.models import Count
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from chat.models import Conversation, Message
from memory.client import services
from memory.client.errors import MemoryDisabled, MemoryServiceError, MemoryUnavailable
from memory.learning.backup import backup_conversation
from memory.models import FailedExchange, MemoryRetrieval, MemorySettings


class MessageInline(admin.TabularInline):
    model = Message
    fields = ("created_at", "role", "content", "status", "model")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.action(description=gettext_lazy("Back up to memory (new exchanges)"))
def back_up_to_memory(modeladmin, request, queryset):
    saved = failed = 0
    for conversation in queryset.select_related("user"):
        try:
            backup_conversation(conversation)
        except (MemoryDisabled, MemoryUnavailable) as exc:
            modeladmin.message_user(
                request,
                _("Stopped after %(saved)d backup(s): %(error)s") % {"saved": saved, "error": exc},
                messages.ERROR,
            )
            return
        except MemoryServiceError as exc:
            failed += 1
            modeladmin.message_user(
                request,
                _("“%(title)s” not backed up: %(error)s")
                % {"title": conversation.title, "error": exc},
                messages.WARNING,
            )
            continue
        saved += 1
    modeladmin.message_user(
        request,
        _("Backed up %(saved)d conversation(s) to memory.") % {"saved": saved},
        messages.SUCCESS,
    )


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("title", "user", "has_memory_backup", "pinned", "message_count", "updated_at")
    list_filter = ("has_memory_backup", "pinned", "created_at", "user")
    search_fields = ("title", "messages__content")
    list_select_related = ("user",)
    readonly_fields = ("created_at", "updated_at")
    inlines = [MessageInline]
    actions = [back_up_to_memory]
    date_hierarchy = "updated_at"

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_message_count=Count("messages"))

    @admin.display(description=gettext_lazy("messages"), ordering="_message_count")
    def message_count(self, obj):
        return obj._message_count


@admin.register(MemorySettings)
class MemorySettingsAdmin(admin.ModelAdmin):
    list_display = ("user", "memory_enabled", "auto_retrieve", "max_results", "min_score")
    list_filter = ("memory_enabled", "auto_retrieve")
    search_fields = ("user__username",)
    change_list_template = "admin/memory/memorysettings/change_list.html"

    def get_urls(self):
        health = path("health/", self.admin_site.admin_view(self.health_view), name="memory_health")
        return [health, *super().get_urls()]

    def health_view(self, request):
        """The memory's health for staff: the client and the server, every detail."""
        health = services.server_health()
        server = health["server"] or {}
        context = {
            **self.admin_site.each_context(request),
            "title": "Memory health",
            "opts": self.model._meta,
            "health": health,
            "server_health": server.get("health") or {},
            "raw": json.dumps(health, ensure_ascii=False, indent=2, default=str),
        }
        return TemplateResponse(request, "admin/memory/health.html", context)


@admin.register(MemoryRetrieval)
class MemoryRetrievalAdmin(admin.ModelAdmin):
    list_display = ("created_at", "user", "conversation", "query", "tokens_added", "latency_ms")
    list_filter = ("created_at",)
    search_fields = ("query", "user__username")
    readonly_fields = [f.name for f in MemoryRetrieval._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(FailedExchange)
class FailedExchangeAdmin(admin.ModelAdmin):
    """Exchanges auto-save left out because the memory refused them (memory/learning/backup.py)."""

    list_display = ("failed_at", "conversation", "answer", "error")
    list_filter = ("failed_at",)
    search_fields = ("error", "conversation__title")
    readonly_fields = ("failed_at", "conversation", "answer", "error")

    def has_add_permission(self, request):
        return False
