"""Model text to HTML: formatting kept, anything executable gone."""

from chat.markdown import render_markdown


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
