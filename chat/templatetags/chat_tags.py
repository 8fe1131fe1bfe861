from django import template
from django.utils.safestring import mark_safe

from chat.markdown import render_markdown

register = template.Library()


@register.filter
def markdown(text):
    """Safe HTML for model-written Markdown (see chat/markdown.py for why it is safe)."""
    return mark_safe(render_markdown(text or ""))  # noqa: S308 - sanitised by nh3


@register.filter
def pretty_json(value):
    """Tool input as indented JSON text (autoescaped by the template like any string)."""
    import json

    try:
        return json.dumps(value, indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)
