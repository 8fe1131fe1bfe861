"""The memory categories as users read them; the list itself is the contract's.

The stored values stay French words ("fondatrice"...: stored memories and exports keep
them, so they never change); people read a
label in their own language and a line saying what the category is for.
"""

from django.utils.translation import gettext_lazy as _

from ikario_rag import contract

LABELS = {
    "fondatrice": _("Foundational"),
    "thematique": _("Thematic"),
    "contextuelle": _("Contextual"),
}
# What each category is for (the guiding prompt's own definitions, memory/recall/prompts.py).
EXPLANATIONS = {
    "fondatrice": _("Key moments and first conversations: what shapes everything else."),
    "thematique": _("In-depth discussions of a subject or an idea."),
    "contextuelle": _("Everyday exchanges worth keeping for a while."),
}


def label(category) -> str:
    return str(LABELS.get(category, category or ""))


def explanation(category) -> str:
    return str(EXPLANATIONS.get(category, ""))


def choices() -> list[tuple[str, str, bool]]:
    """(value, label, is_default) for every category, in the contract's order."""
    return [
        (category, label(category), category == contract.DEFAULT_CATEGORY)
        for category in contract.CATEGORIES
    ]


def legend() -> list[dict]:
    """Every category with its label and explanation, in the contract's order."""
    return [
        {"value": category, "label": label(category), "explanation": explanation(category)}
        for category in contract.CATEGORIES
    ]
