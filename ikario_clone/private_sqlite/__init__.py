"""Django's SQLite backend, keeping the database file its user's only (see base.py)."""
