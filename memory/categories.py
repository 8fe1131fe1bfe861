"""The memory categories as users read them; the list itself is the contract's."""

from ikario_rag import contract

LABELS = {
    "fondatrice": "Fondatrice",
    "thematique": "Thématique",
    "contextuelle": "Contextuelle",
}


def label(category) -> str:
    return LABELS.get(category, category)


def choices() -> list[tuple[str, str, bool]]:
    """(value, label, is_default) for every category, in the contract's order."""
    return [
        (category, label(category), category == contract.DEFAULT_CATEGORY)
        for category in contract.CATEGORIES
    ]
