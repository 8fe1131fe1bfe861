"""French and English: the catalogue is complete, compiled, and what French users read.

The catalogue checks read locale/fr/LC_MESSAGES/django.po with polib; the extraction check
runs Django's own `makemessages` (GNU gettext's xgettext) on a copy of the code, so a
string marked for translation anywhere in the templates or apps and missing from the
catalogue fails here, as does one left untranslated or fuzzy.
"""

import gettext
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polib
import pytest
from django.utils import translation

from chat.models import Conversation
from tests.fixtures.builders import make_conversation

ROOT = Path(__file__).resolve().parents[1]
PO = ROOT / "locale" / "fr" / "LC_MESSAGES" / "django.po"
MO = PO.with_suffix(".mo")
# What a French user must not read any more on the pages below (each was English once).
ENGLISH = [
    "New chat",
    "Search chats",
    "Log out",
    "Settings",
    "How can I help you today?",
    "Enter to send",
    "Conversations",
    "Today",
    "Memory settings",
    "Back to chats",
    "Log in",
    "Sign up",
]


@pytest.fixture(autouse=True)
def _back_to_english():
    # A request in French leaves French active in this thread (LocaleMiddleware does not
    # undo it): later tests of this worker must not inherit it.
    yield
    translation.deactivate()


def _entries():
    return [e for e in polib.pofile(str(PO)) if not e.obsolete]


def test_it_has_every_french_entry_translated_and_none_fuzzy():
    entries = _entries()
    assert len(entries) > 150
    untranslated = [e.msgid for e in entries if not e.translated()]
    fuzzy = [e.msgid for e in entries if "fuzzy" in e.flags]
    assert untranslated == []
    assert fuzzy == []


def test_it_keeps_the_placeholders_of_every_string():
    for entry in _entries():
        for source, french in (
            [(entry.msgid, entry.msgstr)]
            if not entry.msgid_plural
            else [(entry.msgid_plural, t) for t in entry.msgstr_plural.values()]
        ):
            wanted = sorted(polib.re.findall(r"%\(\w+\)[sd]", source))
            assert sorted(polib.re.findall(r"%\(\w+\)[sd]", french)) == wanted, entry.msgid


def test_it_ships_a_compiled_catalogue_matching_the_po(tmp_path):
    fresh = tmp_path / "django.mo"
    polib.pofile(str(PO)).save_as_mofile(str(fresh))
    with MO.open("rb") as shipped, fresh.open("rb") as compiled:
        shipped_catalog = gettext.GNUTranslations(shipped)._catalog
        compiled_catalog = gettext.GNUTranslations(compiled)._catalog
    # The committed .mo is what Django reads: it must say what the .po says (the header's
    # dates aside: msgfmt drops some).
    shipped_catalog.pop("")
    compiled_catalog.pop("")
    assert shipped_catalog == compiled_catalog, "django.mo is stale: run `make messages`"


@pytest.mark.skipif(not shutil.which("xgettext"), reason="GNU gettext missing: make gettext")
def test_it_has_every_string_marked_in_the_code_in_the_catalogue(tmp_path):
    copy = tmp_path / "src"
    for name in ("chat", "memory", "templates", "core", "ikario_clone"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "manage.py", copy)
    (copy / "locale").mkdir()
    env = {**os.environ, "DEBUG": "true", "DJANGO_SETTINGS_MODULE": "ikario_clone.settings"}
    subprocess.run(
        [sys.executable, "manage.py", "makemessages", "-l", "fr", "--no-location"],
        cwd=copy,
        env=env,
        check=True,
        capture_output=True,
    )
    extracted = polib.pofile(str(copy / "locale" / "fr" / "LC_MESSAGES" / "django.po"))
    marked = {(e.msgid, e.msgid_plural) for e in extracted}
    known = {(e.msgid, e.msgid_plural) for e in _entries()}
    assert sorted(marked - known) == [], "strings missing from the catalogue: `make messages`"
    assert sorted(known - marked) == [], "strings no longer in the code: `make messages`"


@pytest.mark.django_db
def test_it_speaks_french_to_a_french_browser(alice_client, alice):
    make_conversation(alice, "Vacances", "Où skier en février ?")
    pages = {
        url: alice_client.get(url, headers={"accept-language": "fr-FR,fr;q=0.9"})
        for url in ["/", "/settings/", "/memory/settings/", "/memory/profile/"]
    }
    for url, response in pages.items():
        html = response.content.decode()
        assert response.status_code == 200, url
        assert '<html lang="fr">' in html, url
        for english in ENGLISH:
            assert f">{english}<" not in html, (url, english)
    home = pages["/"].content.decode()
    assert "Nouvelle conversation" in home and "Aujourd’hui" in home
    assert "Comment puis-je vous aider aujourd’hui ?" in home
    assert "Réglages de la mémoire" in pages["/memory/settings/"].content.decode()


@pytest.mark.django_db
def test_it_speaks_english_by_default_and_to_an_english_browser(alice_client):
    for headers in ({}, {"accept-language": "en-GB,en;q=0.9"}, {"accept-language": "de"}):
        html = alice_client.get("/", headers=headers).content.decode()
        assert '<html lang="en">' in html
        assert ">+ New chat<" in html


@pytest.mark.django_db
def test_it_keeps_the_language_chosen_in_settings_over_the_browser(alice_client):
    settings_page = alice_client.get("/settings/").content.decode()
    assert 'action="/i18n/setlang/"' in settings_page and 'name="language"' in settings_page
    response = alice_client.post("/i18n/setlang/", {"language": "fr", "next": "/settings/"})
    assert response.status_code == 302 and response["Location"] == "/settings/"
    # An English browser still gets French: the choice wins, in a cookie kept a year.
    html = alice_client.get("/", headers={"accept-language": "en"}).content.decode()
    assert '<html lang="fr">' in html and "Nouvelle conversation" in html
    assert response.cookies["django_language"]["max-age"] == 365 * 24 * 3600
    alice_client.post("/i18n/setlang/", {"language": "en", "next": "/"})
    assert (
        ">+ New chat<" in alice_client.get("/", headers={"accept-language": "fr"}).content.decode()
    )


@pytest.mark.django_db
def test_it_translates_errors_and_form_texts(alice_client, alice):
    fr = {"accept-language": "fr"}
    conversation = make_conversation(alice, "Chat", "Hello")
    response = alice_client.post(
        f"/c/{conversation.pk}/rename/", {"title": "   "}, headers={**fr, "hx-request": "true"}
    )
    assert response.status_code == 400
    assert response.content.decode() == "Le titre : ne doit pas être vide."
    empty = alice_client.post("/c/new/", {"content": " "}, headers=fr).content.decode()
    assert "Message : ne doit pas être vide." in empty
    settings_page = alice_client.get("/settings/", headers=fr).content.decode()
    assert "Utilisé pour les nouvelles conversations." in settings_page
    assert Conversation.objects.filter(user=alice).count() == 1


def test_it_answers_offline_in_the_page_language():
    from chat import offline

    with translation.override("fr"):
        french = offline.plan_reply(
            system="", messages=[{"role": "user", "content": "Bonjour"}], tools=[]
        )
    english = offline.plan_reply(system="", messages=[{"role": "user", "content": "Hi"}], tools=[])
    assert (
        "Répondeur hors ligne" in french["text"] and "Vous avez dit : « Bonjour »" in french["text"]
    )
    assert english["text"].startswith("*Offline responder: no ANTHROPIC_API_KEY")


def test_it_picks_the_socket_language_like_the_pages():
    from chat.consumers import socket_language

    assert socket_language({"headers": [(b"accept-language", b"fr-CA,fr;q=0.9,en;q=0.5")]}) == "fr"
    assert socket_language({"headers": [(b"accept-language", b"de,en;q=0.5")]}) == "en"
    chosen = {"cookies": {"django_language": "fr"}, "headers": [(b"accept-language", b"en")]}
    assert socket_language(chosen) == "fr"
    assert socket_language({}) == "en"


@pytest.mark.django_db
def test_it_names_the_memory_models_in_the_admin_in_both_languages(client, django_user_model):
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "x" * 12)
    client.force_login(admin)
    english = client.get("/admin/", headers={"accept-language": "en"}).content.decode()
    assert ">Memory settings<" in english and "settingss" not in english.lower()
    french = client.get("/admin/", headers={"accept-language": "fr"}).content.decode()
    assert ">Réglages de la mémoire<" in french and ">Conversations<" in french


@pytest.mark.django_db
def test_it_writes_dates_in_the_page_language(alice_client, alice):
    from datetime import UTC, datetime

    from chat.models import Message

    make_conversation(alice, "Summer", "We hiked the Vercors in February.")
    Message.objects.filter(conversation__user=alice).update(
        created_at=datetime(2025, 2, 14, 9, 30, tzinfo=UTC)
    )
    french = alice_client.get("/search/?q=Vercors", headers={"accept-language": "fr"})
    english = alice_client.get("/search/?q=Vercors", headers={"accept-language": "en"})
    assert "14 fév. 2025" in french.content.decode()  # as French writes it (not "14 Fév 2025")
    assert "14 Feb 2025" in english.content.decode()


# What the /memory page said in English (each is translated in locale/fr).
MEMORY_PAGE_ENGLISH = [
    "Your memory",
    "Controls",
    "Pause memory",
    "Save conversations to memory",
    "Search and reference past chats",
    "Reset memory…",
    "Delete everything",
    "What Ikario knows about you",
    "Forget a topic",
    "Check a statement against memory",
    "Trace a concept",
    "Export and import",
    "Apply",
    "Clear",
    "Edit",
    "Trace",
    "Delete",
    "Fact",
]


def test_it_speaks_french_on_the_memory_page(memory_server, alice, alice_client):
    from memory.client import services

    fr = {"accept-language": "fr-FR,fr;q=0.9"}
    kept = services.add_thought(
        user=alice,
        content="Alice skie à Chamonix.",
        context={"kind": "fact", "tags": ["ski"], "source": "conversation:7"},
    )["id"]
    page = alice_client.get("/memory/", headers=fr)
    html = page.content.decode()
    assert page.status_code == 200 and '<html lang="fr">' in html
    english_html = alice_client.get("/memory/", headers={"accept-language": "en"}).content.decode()
    for english in MEMORY_PAGE_ENGLISH:
        assert f">{english}<" in english_html, english  # so its absence below means something
        assert f">{english}<" not in html, english
    for french in [
        "<h1>Votre mémoire</h1>",
        "Mettre la mémoire en pause",
        "Rechercher et consulter les conversations passées",
        "Oublier un sujet",
        "Exporter tous mes souvenirs (JSON)",
        "1 souvenir, du plus récent au plus ancien",
        ">Fait<",  # the kind's label
        ">Contextuelle<",  # the category's label (its stored value is "contextuelle")
        ">Modifier<",
        "D’une conversation supprimée depuis",  # conversation 7 is not alice's
    ]:
        assert french in html, french
    assert "newest first" not in html and "Alice skie à Chamonix." in html

    # The forms' answers and a card's edit form, in French too; nothing deleted by them.
    hx = {**fr, "hx-request": "true"}
    forget = alice_client.post("/memory/forget", {"topic": "Chamonix"}, headers=hx)
    assert "1 souvenir serait supprimé :" in forget.content.decode()
    assert ">Les supprimer<" in forget.content.decode()
    edit = alice_client.get(f"/memory/m/{kept}/card?edit=1", headers=hx).content.decode()
    assert ">Souvenir<" in edit and "Étiquettes" in edit and ">Annuler<" in edit
    reset = alice_client.post("/memory/reset", {"confirmation": "reset my memory"}, headers=hx)
    assert reset.status_code == 400
    assert "tapez « réinitialiser ma mémoire » exactement pour confirmer" in reset.content.decode()
    assert [m["id"] for m in services.list_memories(user=alice)["memories"]] == [kept]
