"""The background worker for every app's tasks: retries and recovery on the database backend
(manage.py db_worker), the same promises on RQ."""
