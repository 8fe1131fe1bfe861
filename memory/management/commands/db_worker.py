"""manage.py db_worker: django-tasks-db's worker, with retries and recovery
(memory/worker/database.py).

Same options as django-tasks-db's command, which this one replaces (`memory` comes before
`django_tasks_db` in INSTALLED_APPS); worker ids default to `<host>:<pid>:<random>` so a
dead worker's task is seen at once on its own host. A sweeper thread puts back the tasks of
dead workers every TASKS_SWEEP_INTERVAL seconds. `--nice` lowers its CPU priority: the
web app's replies get the cores first (`make run`'s Procfile uses it).
"""

import os

from django.utils.autoreload import DJANGO_AUTORELOAD_ENV, run_with_reloader
from django_tasks_db.management.commands import db_worker

from memory.worker.database import Sweeper, Worker, keep_connections, new_worker_id


class Command(db_worker.Command):
    help = "Run the background worker (django-tasks-db's, with retries and recovery)"

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.set_defaults(worker_id=new_worker_id())
        parser.add_argument(
            "--nice",
            type=int,
            default=0,
            help="Add N to this worker's niceness (os.nice): the app's replies get the CPU first",
        )

    def handle(
        self,
        *,
        verbosity,
        queue_name,
        interval,
        batch,
        backend_name,
        startup_delay,
        reload,
        max_tasks,
        worker_id,
        exclude_queues,
        nice,
        **options,
    ):
        self.configure_logging(verbosity)
        keep_connections()
        if nice:
            os.nice(nice)
        queue_names = queue_name.split(",")
        excluded = exclude_queues.split(",") if exclude_queues else []
        if excluded and "*" not in queue_names:
            raise db_worker.CommandError("--exclude-queues can only be used with --queue-name=*")
        worker = Worker(
            queue_names=queue_names,
            interval=interval,
            batch=batch,
            backend_name=backend_name,
            startup_delay=startup_delay,
            max_tasks=max_tasks,
            worker_id=worker_id,
            excluded_queue_names=excluded,
        )
        reload = reload and not batch
        # Under the reloader, the child process (DJANGO_AUTORELOAD_ENV set) does the work.
        working = not reload or os.environ.get(DJANGO_AUTORELOAD_ENV) == "true"
        if working:
            worker.configure_signals()
            if not batch:
                Sweeper(backend_name).start()
        if reload:
            run_with_reloader(worker.run)
        else:
            worker.run()
