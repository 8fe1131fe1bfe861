from django import template
from django.conf import settings
from django.utils.safestring import mark_safe

from chat import readable
from chat.markdown import plain_text, render_markdown

register = template.Library()


@register.filter
def markdown(text):
    """Safe HTML for model-written Markdown (see chat/markdown.py for why it is safe)."""
    return mark_safe(render_markdown(text or ""))  # noqa: S308 - sanitised by nh3


@register.filter
def plain_title(title):
    """A conversation's title as shown: no Markdown marks, also in a title written before
    titles were made plain (chat.services.title_from)."""
    return plain_text(title or "") or title


@register.simple_tag
def readable_tool(call) -> readable.Readable:
    """A tool call's input and result as readable lines (chat/readable.py), not JSON."""
    return readable.tool_call(call if isinstance(call, dict) else {})


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
