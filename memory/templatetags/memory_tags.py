"""Template helpers for the memory widgets included in the chat page."""

from django import template

from memory import categories, mcp_client

register = template.Library()


@register.simple_tag
def memory_enabled() -> bool:
    """False when MCP_MEMORY_ENABLED is off: the widgets then offer nothing to click."""
    return mcp_client.memory_enabled()


@register.simple_tag
def memory_categories() -> list[tuple[str, str, bool]]:
    """(value, label, is_default) of every category, for the widgets' pickers."""
    return categories.choices()
