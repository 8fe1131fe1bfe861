"""Full-text search over messages, kept in sync by the database itself (chat/search.py).

SQLite: an FTS5 index over messages.content (external content: the text is stored once,
in messages) and three triggers, so every insert, edit and delete, the deletes of a
conversation's messages included, reaches the index in the same transaction.
Postgres: a GIN index on the SearchVector that chat/search.py queries (to_tsvector('simple',
content)), which Postgres maintains itself.
"""

from django.db import migrations

SQLITE_FORWARD = [
    # unicode61 with remove_diacritics 2: "eleve" finds "élève", as users type.
    """CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, content='messages', content_rowid='id',
        tokenize='unicode61 remove_diacritics 2'
    )""",
    """CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    END""",
    """CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content)
        VALUES ('delete', old.id, old.content);
    END""",
    # OF content: the streaming heartbeat rewrites the row every few seconds, not its text.
    """CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content)
        VALUES ('delete', old.id, old.content);
        INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    END""",
    "INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS messages_fts_update",
    "DROP TRIGGER IF EXISTS messages_fts_delete",
    "DROP TRIGGER IF EXISTS messages_fts_insert",
    "DROP TABLE IF EXISTS messages_fts",
]
POSTGRES_INDEX = "messages_content_search"


def _postgres_index():
    # Built from the very expression the search uses, so the planner matches the two.
    from django.contrib.postgres.indexes import GinIndex
    from django.contrib.postgres.search import SearchVector

    return GinIndex(SearchVector("content", config="simple"), name=POSTGRES_INDEX)


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        for statement in SQLITE_FORWARD:
            schema_editor.execute(statement)
    elif vendor == "postgresql":
        schema_editor.add_index(apps.get_model("chat", "Message"), _postgres_index())


def backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        for statement in SQLITE_BACKWARD:
            schema_editor.execute(statement)
    elif vendor == "postgresql":
        schema_editor.remove_index(apps.get_model("chat", "Message"), _postgres_index())


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0004_conversation_summaries"),
    ]

    operations = [
        migrations.RunPython(forward, backward),
    ]
