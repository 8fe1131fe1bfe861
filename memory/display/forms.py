"""The memory page's forms: each field's limit is the MCP contract's, each error names it."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from ikario_rag import contract
from memory.display import categories
from memory.display.cards import kind_choices

PAGE_SIZE = 20
MAX_PAGE = contract.MAX_OFFSET // PAGE_SIZE
MODES = [("hybrid", _("Hybrid")), ("semantic", _("Semantic")), ("text", _("Text"))]


def category_choices(empty_label):
    return [("", empty_label), *[(value, label) for value, label, _ in categories.choices()]]


def split_tags(raw: str) -> list[str]:
    """'ski, #travel, ski' -> ['ski', 'travel']."""
    tags: list[str] = []
    for part in (raw or "").split(","):
        tag = part.strip().lstrip("#").strip()
        if tag and tag not in tags:
            tags.append(tag)
    return tags


class MemoryFilterForm(forms.Form):
    """What the list shows: a search (with its mode) or everything newest first, filtered."""

    q = forms.CharField(label=_("Search"), required=False, max_length=contract.MAX_QUERY)
    mode = forms.ChoiceField(label=_("Mode"), choices=MODES, required=False)
    kind = forms.ChoiceField(label=_("Kind"), required=False)
    category = forms.ChoiceField(label=_("Category"), required=False)
    tag = forms.CharField(label=_("Tag"), required=False, max_length=contract.MAX_LABEL)
    date_from = forms.DateField(label=_("From"), required=False)
    date_to = forms.DateField(label=_("To"), required=False)
    source = forms.CharField(label=_("Source"), required=False, max_length=contract.MAX_SOURCE)
    page = forms.IntegerField(label=_("Page"), required=False, min_value=1, max_value=MAX_PAGE)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = [("", _("All kinds")), *kind_choices()]
        self.fields["category"].choices = category_choices(_("All categories"))

    def clean(self):
        data = super().clean()
        start, end = data.get("date_from"), data.get("date_to")
        if start and end and start > end:
            self.add_error("date_from", _("must be on or before the end date"))
        data["q"] = " ".join((data.get("q") or "").split())
        data["mode"] = data.get("mode") or "hybrid"
        data["page"] = data.get("page") or 1
        return data


class MemoryEditForm(forms.Form):
    content = forms.CharField(
        # One memory's text ("Souvenir" in French), not the feature ("Mémoire").
        label=pgettext_lazy("one memory", "Memory"),
        max_length=contract.MAX_CONTENT,
        widget=forms.Textarea(attrs={"rows": 4}),
    )
    category = forms.ChoiceField(label=_("Category"))
    tags = forms.CharField(
        label=_("Tags"),
        required=False,
        max_length=contract.MAX_LIST * (contract.MAX_LABEL + 2),
        help_text=_("Separated by commas."),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["category"].choices = category_choices(_("Category"))[1:]

    def clean_tags(self):
        tags = split_tags(self.cleaned_data.get("tags", ""))
        if len(tags) > contract.MAX_LIST:
            raise forms.ValidationError(_("at most %(n)d tags") % {"n": contract.MAX_LIST})
        if any(len(tag) > contract.MAX_LABEL for tag in tags):
            raise forms.ValidationError(
                _("each tag at most %(n)d characters") % {"n": contract.MAX_LABEL}
            )
        return tags


class ForgetTopicForm(forms.Form):
    topic = forms.CharField(label=_("Topic"), max_length=contract.MAX_TOPIC)


class ConsistencyForm(forms.Form):
    statement = forms.CharField(
        label=_("Statement"),
        max_length=contract.MAX_QUERY,
        widget=forms.Textarea(attrs={"rows": 2}),
    )


class TraceForm(forms.Form):
    concept = forms.CharField(label=_("Concept"), max_length=contract.MAX_TOPIC)


class ImportForm(forms.Form):
    file = forms.FileField(label=_("Export file (JSON)"))


class HistoryImportForm(forms.Form):
    """Another assistant's export: a ChatGPT zip or conversations.json, a Claude.ai export, or a
    text file of pasted memories (memory/history/)."""

    file = forms.FileField(label=_("Your export from ChatGPT or Claude.ai, or pasted memories"))


class ControlsForm(forms.Form):
    """One switch at a time: which, and to what."""

    control = forms.ChoiceField(
        choices=[
            ("enabled", "enabled"),
            ("paused", "paused"),
            ("autosave", "autosave"),
            ("past_chats", "past_chats"),
        ]
    )
    on = forms.BooleanField(required=False)


class ResetForm(forms.Form):
    confirmation = forms.CharField(label=_("Confirmation"), max_length=100)

    def clean_confirmation(self):
        typed = " ".join(self.cleaned_data["confirmation"].split()).lower()
        if typed != str(reset_phrase()).lower():
            raise forms.ValidationError(
                _("type “%(phrase)s” exactly to confirm") % {"phrase": reset_phrase()}
            )
        return typed


def reset_phrase():
    return _("reset my memory")
