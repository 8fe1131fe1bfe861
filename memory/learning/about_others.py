"""Other people's sensitive matters: not learnt from what the user says in passing.

"My sister is pregnant but hasn't told anyone", "my colleague has cancer": the user tells
the assistant, not the memory. A statement about someone else (a relative, a colleague, a
friend: "my sister", "the user's colleague", "la sœur de l'utilisateur") and their health,
pregnancy, addiction, mental health, sexuality, legal or money trouble is not learnt as a
fact, unless the user asks to remember it ("remember that...", "retiens que..."). Read by
both learners: the rules (memory/learning/offline_facts.py) and the model's output check
(memory/learning/extraction.py). The user's own health is theirs to share and is still learnt.
"""

from __future__ import annotations

import re

from ikario_rag.text import fold

_RELATION = (
    r"(?:sister|brother|mother|mom|mum|dad|father|parents?|colleague|co-?worker|boss|manager"
    r"|friend|best friend|neighbou?r|cousin|aunt|uncle|wife|husband|partner|girlfriend"
    r"|boyfriend|son|daughter|kids?|child|roommate|flatmate|housemate|grandma|grandmother"
    r"|grandfather|grandpa|niece|nephew|sister-in-law|brother-in-law|mother-in-law"
    r"|father-in-law|ex|teammate|employee|student|client|patient|landlord|tenant)"
)
_RELATION_FR = (
    r"(?:soeur|frere|mere|pere|parents|collegue|patron|patronne|chef|cheffe|ami|amie"
    r"|meilleure? amie?|voisin|voisine|cousin|cousine|tante|oncle|femme|mari|conjoint|conjointe"
    r"|compagnon|compagne|copain|copine|fils|fille|enfants?|coloc|colocataire|grand-mere"
    r"|grand-pere|niece|neveu|belle-soeur|beau-frere|belle-mere|beau-pere|ex|employee?"
    r"|eleve|client|cliente|patient|patiente|proprio|proprietaire|locataire|manager)"
)
_SOMEONE_ELSE = re.compile(
    rf"\b(?:my|our|the user's|user's|their|his|her|a|one of my)\s+(?:\w+\s+)?{_RELATION}\b"
    rf"|\b(?:mon|ma|mes|notre|nos|un|une|sa|son|ses)\s+(?:\w+\s+)?{_RELATION_FR}\b"
    rf"|\b{_RELATION_FR}\s+de\s+l'utilisat(?:eur|rice)\b"
)
_SENSITIVE = re.compile(
    r"\b(?:pregnan\w*|expecting a baby|miscarriage|abortion|cancer|tumou?r|chemo\w*|hiv|aids"
    r"|std|depress\w*|bipolar|schizophreni\w*|anxiety|panic attacks?|suicid\w*|self-harm"
    r"|eating disorder|anorexi\w*|bulimi\w*|rehab|addict\w*|alcoholi\w*|drug problem|relapsed?"
    r"|overdosed?|diagnos\w*|ill|illness|sick|disease|dementia|alzheimer'?s?|parkinson'?s?"
    r"|autis\w*|adhd|disabilit\w*|surgery|terminal|dying|affair|cheating|gay|lesbian"
    r"|bisexual|transgender|trans|coming out|came out|arrested|prison|jail|criminal record"
    r"|bankrupt\w*|debts?|undocumented|therapy|therapist|psychiatri\w*|hospitali[sz]ed"
    r"|enceinte|grossesse|fausse couche|avortement|tumeur|chimio\w*|vih|sida|deprim\w*"
    r"|bipolaire|schizophrene|anxiete|suicidaire|anorexi\w*|boulimi\w*|cure|desintox\w*"
    r"|alcoolique|drogue|rechute|diagnostique\w*|maladie|malade|demence|autiste|tdah"
    r"|handicap\w*|opere\w*|chirurgie|mourant\w*|liaison|trompe\w*|homosexuel\w*"
    r"|lesbienne|casier judiciaire|faillite|dettes?|sans[- ]papiers|therapie|psy"
    r"|psychiatr\w*|hospitalise\w*)\b"
)
_ASKED = re.compile(
    r"\b(?:remember|don't forget|do not forget|keep in mind|make a note|note that|save that"
    r"|retiens|souviens-toi|rappelle-toi|n'oublie pas|note que|garde en memoire"
    r"|memorise|enregistre)\b"
)


# The user is the subject ("I'm pregnant with our second child", "my partner and I are
# expecting"): theirs to share.
_THE_USER = re.compile(
    r"^\s*(?:i|i'm|i've|we|we're|we've|je|j'|nous|on|the user(?!'s)|l'utilisat(?:eur|rice))\b"
    r"|\b(?:and i|and me|et moi|and the user|et l'utilisat(?:eur|rice))\b"
)


def sensitive_about_others(text: str) -> bool:
    """Whether `text` tells someone else's health, pregnancy, addiction or the like."""
    folded = fold(text)
    if _THE_USER.search(folded):
        return False
    return bool(_SOMEONE_ELSE.search(folded) and _SENSITIVE.search(folded))


def asked_to_remember(text: str) -> bool:
    """Whether the user asked the assistant to remember what they said."""
    return bool(_ASKED.search(fold(text)))
