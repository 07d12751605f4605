"""sendjobs for Python (psycopg 3): jobs added in your transaction, and a worker.

    from sendjobs import enqueue, Worker, SENT

What the SQL functions they call do: the sendjobs repository's docs/reference.md.
"""

from .producer import enqueue, enqueue_async, enqueue_many, enqueue_many_async
from .worker import SENT, Job, Outcome, Worker, failed, retry

__version__ = "0.3.0"
__all__ = [
    "enqueue",
    "enqueue_async",
    "enqueue_many",
    "enqueue_many_async",
    "Job",
    "Outcome",
    "SENT",
    "Worker",
    "failed",
    "retry",
    "__version__",
]
