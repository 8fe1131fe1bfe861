"""The forms of /memory's "Add a fact" and retrieval sliders (memory/web/facts.py): the
contract's limits and the server's TTL rule, each error on its field."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ikario_rag import contract
from memory.client import user_settings
from memory.client import validation as check
from memory.client.errors import MemoryInputError
from memory.display.cards import kind_choices
from memory.display.forms import MemoryEditForm, category_choices


class AddFactForm(forms.Form):
    content = forms.CharField(
        label=gettext_lazy("Fact"),
        max_length=contract.MAX_CONTENT,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    kind = forms.ChoiceField(label=gettext_lazy("Kind"), initial="fact")
    category = forms.ChoiceField(label=gettext_lazy("Category"), required=False)
    tags = forms.CharField(
        label=gettext_lazy("Tags"),
        required=False,
        max_length=contract.MAX_LIST * (contract.MAX_LABEL + 2),
        help_text=gettext_lazy("Separated by commas."),
    )
    expiry = forms.CharField(
        label=gettext_lazy("Forget after"),
        required=False,
        max_length=check.MAX_TTL,
        help_text=gettext_lazy("A duration such as 3h, 1d or 2w; empty: kept for good."),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = kind_choices()
        self.fields["category"].choices = category_choices(gettext_lazy("Chosen by Ikario"))

    clean_tags = MemoryEditForm.clean_tags

    def clean_expiry(self):
        value = self.cleaned_data.get("expiry", "").strip()
        if not value:
            return None
        try:
            return check.ttl("expiry", value)
        except MemoryInputError:
            raise forms.ValidationError(
                _("must be a duration such as 3h, 1d or 2w (minutes m, hours h, days d, weeks w)")
            ) from None

    def context(self) -> dict:
        data = self.cleaned_data
        found = {"kind": data["kind"], "category": data["category"] or None}
        found |= {"tags": data["tags"] or None, "ttl": data["expiry"]}
        return {name: value for name, value in found.items() if value is not None}


class RecallSlidersForm(forms.Form):
    max_results = forms.IntegerField(
        label=gettext_lazy("Memories recalled"), min_value=1, max_value=user_settings.MOST_RECALLED
    )
    min_score = forms.FloatField(label=gettext_lazy("Minimum score"), min_value=0.0, max_value=1.0)
