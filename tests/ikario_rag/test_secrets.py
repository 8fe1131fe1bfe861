"""The secret rule (ikario_rag/secrets.py) on its own: the measured sets (no secret kept, no
look-alike changed), the checksums' properties, and the write boundary's text cleaning
(bidirectional controls, look-alike brackets)."""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ikario_rag import secrets, text, validate

SETS = Path(__file__).resolve().parents[2] / "bench" / "quality"


def _set(name: str) -> dict:
    return json.loads((SETS / name).read_text())


def _kept(case: dict) -> bool:
    """Whether the secret, or a run of four of its characters or more, is still there."""
    redacted = secrets.redact(case["text"]).text
    value = case["secret"]
    return value in redacted or value.replace(" ", "") in redacted.replace(" ", "")


@pytest.mark.parametrize("name", ["secrets_dev.json", "secrets_heldout.json", "secrets_fresh.json"])
def test_no_secret_of_the_sets_is_kept(name):
    cases = _set(name)["secrets"]
    kept = [c["text"] for c in cases if _kept(c)]
    # The held-out set was written after the rule and is reported as measured.
    allowed = _set(name).get("known_misses", 0)
    assert len(kept) <= allowed, kept


@pytest.mark.parametrize("name", ["secrets_dev.json", "secrets_heldout.json", "secrets_fresh.json"])
def test_look_alikes_are_kept_word_for_word(name):
    data = _set(name)
    changed = [t for t in data["lookalikes"] if secrets.redact(t).text != t]
    assert len(changed) <= data.get("known_changed", 0), changed


def test_it_names_the_secret_in_the_language_of_the_word_that_named_it():
    assert secrets.redact("Mon mot de passe est Soleil2024").text == (
        "Mon mot de passe est [un mot de passe]"
    )
    assert secrets.redact("The door code is 4821B.").text == "The door code is [a code]."
    assert secrets.redact("Voici mon IBAN : FR76 3000 6000 0112 3456 7890 189").kept_out == (
        "bank account",
    )


def test_a_description_of_a_secret_is_no_secret():
    for said in (
        "My password is weak",
        "My password is the name of my dog",
        "Mon code PIN est oublié",
        "The PIN is four digits long",
        "Our zip code is 94107",
        "Le code postal est 69003",
    ):
        assert secrets.find(said) == [], said


def _luhn_digit(body: str) -> str:
    for digit in "0123456789":
        if secrets.luhn(body + digit):
            return digit
    raise AssertionError(body)


@given(st.text(alphabet="0123456789", min_size=14, max_size=14))
def test_a_visa_number_with_its_luhn_digit_is_kept_out_and_one_digit_off_is_not(body):
    number = "4" + body
    full = number + _luhn_digit(number)  # 16 digits
    assert secrets.kind_in(f"paid with {full} today") == "card number"
    wrong = full[:-1] + str((int(full[-1]) + 1) % 10)
    assert secrets.kind_in(f"order {wrong} today") is None


def _iban(country: str, bban: str) -> str:
    number = "".join(str(int(c, 36)) for c in bban + country + "00")
    return f"{country}{98 - int(number) % 97:02d}{bban}"


@given(st.text(alphabet=string.digits, min_size=23, max_size=23))
def test_a_french_iban_with_its_checksum_is_kept_out_and_a_changed_one_is_not(bban):
    iban = _iban("FR", bban)
    assert secrets.iban_valid(iban)
    assert secrets.kind_in(f"virement sur {iban} demain") == "bank account"
    changed = iban[:-1] + str((int(iban[-1]) + 1) % 10)
    assert not secrets.iban_valid(changed)


def test_a_nir_and_an_ssn_are_id_numbers_and_phone_numbers_are_not():
    assert secrets.kind_in("1 85 05 78 006 084 91") == "id number"
    assert secrets.kind_in("SSN 219-09-9999") == "id number"
    assert secrets.kind_in("1 85 05 78 006 084 90") is None  # its key is wrong
    assert secrets.kind_in("Call 06 12 34 56 78 or (415) 555-0134") is None


def test_a_label_that_repeats_a_secret_goes_and_others_stay():
    stored, kept, values = validate.kept_out_of("my password is Tulip$2024")
    assert stored == "my password is [a password]"
    assert validate.stored_labels(["tulip", "nurse", "Tulip$2024"], values, kept) == ["nurse"]


def test_the_write_boundary_drops_bidi_controls_and_plains_look_alike_brackets():
    assert text.clean("invoice\u202egpj.exe") == "invoicegpj.exe"
    assert text.clean("\uff1cb\uff1ebold\u3008/b\u3009") == "<b>bold</b>"
    # A forged private marker becomes a real one, and its span is never stored.
    assert text.clean("kept \uff1cprivate\uff1esecret\uff1c/private\uff1e kept") == "kept kept"


@pytest.mark.parametrize(
    ("said", "stored"),
    [
        ("passcode 8812", "passcode [a password]"),
        ("Wifi password → Bl4ck!", "Wifi password → [a password]"),
        ("the keycode to the flat is 2255", "the keycode to the flat is [a code]"),
        ("The user's door code is 4821.", "The user's door code is [a code]."),
        ("mon mot de passe, c'est Soleil2024", "mon mot de passe, c'est [un mot de passe]"),
        ("card 4111-1111-1111-1111", "card [a card number]"),
        ("IBAN FR7630006000011234567890189", "IBAN [a bank account number]"),
    ],
)
def test_phrasings_found_by_probing(said, stored):
    assert secrets.redact(said).text == stored
