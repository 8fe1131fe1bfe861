from django import template
from django.conf import settings
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


@register.simple_tag(takes_context=True)
def page_slot(context, name, **extra):
    """The templates other apps put in the chat page's slot `name` (settings.CHAT_PAGE_SLOTS),
    rendered with the page's context plus `extra` (e.g. message=m)."""
    engine = context.template.engine
    parts = []
    with context.push(**extra):
        for template_name in settings.CHAT_PAGE_SLOTS.get(name, ()):
            parts.append(engine.get_template(template_name).render(context))
    return mark_safe("".join(parts))  # noqa: S308 - rendered (autoescaped) templates
