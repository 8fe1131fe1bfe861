"""Full-text search over messages, kept in sync by the database itself (chat/search.py).

SQLite: an FTS5 index over messages.content (external content: the text is stored once,
in messages) and three triggers, so every insert, edit and delete, the deletes of a
conversation's messages included, reaches the index in the same transaction.
Postgres: a GIN index on to_tsvector('simple', content), which Postgres maintains.
Other databases get no index (search scans).
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
POSTGRES_FORWARD = [
    "CREATE INDEX messages_content_search ON messages "
    "USING gin (to_tsvector('simple'::regconfig, content))",
]
POSTGRES_BACKWARD = ["DROP INDEX IF EXISTS messages_content_search"]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0004_conversation_summaries"),
    ]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
        ),
    ]
