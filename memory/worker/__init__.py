"""The background worker for every app's tasks, on every topology: django-tasks-db's, with
retries and recovery (manage.py db_worker, memory/worker/database.py)."""
