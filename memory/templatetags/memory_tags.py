"""Template helpers for the memory widgets included in the chat page."""

from django import template

from memory import mcp_client

register = template.Library()


@register.simple_tag
def memory_enabled() -> bool:
    """False when MCP_MEMORY_ENABLED is off: the widgets then offer nothing to click."""
    return mcp_client.memory_enabled()
