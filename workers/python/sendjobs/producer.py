"""The producer: jobs added on your own connection or cursor, in your transaction, so that
a job commits with the business write that asked for it, or goes with it.

One statement a call: sendjobs_enqueue for one job, sendjobs_enqueue_many for many
(docs/reference.md). The functions are called by name, as the connection's search_path
finds them, or in `schema`. Every parameter is cast: psycopg would send a bare int as a
smallint, and no signature takes one.
"""

from __future__ import annotations

import datetime
from typing import Any, Optional, Sequence, TypeVar, Union

from psycopg import AsyncConnection, AsyncCursor, Connection, Cursor, sql
from psycopg.types.json import Jsonb

# When a job is due: a time (timezone-aware), or a delay on the database's clock, which
# judges due times and leases (docs/decisions/0004-the-clock.md); None is now.
Due = Optional[Union[datetime.datetime, datetime.timedelta]]
T = TypeVar("T")
# One value for every job, or a list of one per job.
Each = Union[T, Sequence[T]]


def _function(schema: Optional[str], name: str) -> sql.Composable:
    if schema is None:
        return sql.Identifier(name)
    return sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(name))


def _aware(at: datetime.datetime) -> datetime.datetime:
    if at.tzinfo is None:
        raise ValueError("run_at must be timezone-aware: a naive time would be read in the session's TimeZone")
    return at


def _one(
    payload: Any,
    queue: str,
    run_at: Due,
    transaction_id: Optional[str],
    idempotency_key: Optional[str],
    max_attempts: Optional[int],
    ordering_key: Optional[str],
    priority: int,
    schema: Optional[str],
) -> tuple[sql.Composable, list[Any]]:
    if run_at is None:
        due, due_params = sql.SQL("NULL::timestamptz"), []
    elif isinstance(run_at, datetime.timedelta):
        due, due_params = sql.SQL("clock_timestamp() + %s::interval"), [run_at]
    elif isinstance(run_at, datetime.datetime):
        due, due_params = sql.SQL("%s::timestamptz"), [_aware(run_at)]
    else:
        raise TypeError(f"run_at must be a datetime, a timedelta or None, not {type(run_at).__name__}")
    query = sql.SQL("SELECT {}(%s::jsonb, %s::text, {}, %s::text, %s::text, %s::int, %s::text, %s::int)").format(
        _function(schema, "sendjobs_enqueue"), due
    )
    return query, [
        Jsonb(payload),
        queue,
        *due_params,
        transaction_id,
        idempotency_key,
        max_attempts,
        ordering_key,
        priority,
    ]


def _listed(value: Any, count: int, name: str) -> list[Any]:
    """A per-job list as given, or one value for every job as a list of one."""
    if isinstance(value, (list, tuple)):
        if len(value) not in (1, count):
            raise ValueError(f"{name} holds {len(value)} values for {count} payloads: one per job, or one for all")
        return list(value)
    return [value]


def _many(
    payloads: Sequence[Any],
    queue: Each[str],
    run_at: Each[Due],
    transaction_id: Each[Optional[str]],
    idempotency_key: Each[Optional[str]],
    max_attempts: Each[Optional[int]],
    ordering_key: Each[Optional[str]],
    priority: Each[int],
    schema: Optional[str],
) -> tuple[sql.Composable, list[Any]]:
    count = len(payloads)
    due = _listed(run_at, count, "run_at")
    at = [_aware(d) if isinstance(d, datetime.datetime) else None for d in due]
    delay = [d if isinstance(d, datetime.timedelta) else None for d in due]
    for d in due:
        if d is not None and not isinstance(d, (datetime.datetime, datetime.timedelta)):
            raise TypeError(f"run_at must hold datetimes, timedeltas or None, not {type(d).__name__}")
    query = sql.SQL(
        "SELECT {}(%s::jsonb[], %s::text[], "
        "CASE WHEN %s THEN NULL ELSE ARRAY(SELECT coalesce(due.at, clock_timestamp() + due.delay) "
        "FROM unnest(%s::timestamptz[], %s::interval[]) WITH ORDINALITY AS due (at, delay, ord) "
        "ORDER BY due.ord) END, %s::text[], %s::text[], %s::int[], %s::text[], %s::int[])"
    ).format(_function(schema, "sendjobs_enqueue_many"))
    return query, [
        [Jsonb(p) for p in payloads],
        _listed(queue, count, "queue"),
        all(d is None for d in due),
        at,
        delay,
        _listed(transaction_id, count, "transaction_id"),
        _listed(idempotency_key, count, "idempotency_key"),
        _listed(max_attempts, count, "max_attempts"),
        _listed(ordering_key, count, "ordering_key"),
        _listed(priority, count, "priority"),
    ]


def enqueue(
    conn: Union[Connection[Any], Cursor[Any]],
    payload: Any,
    *,
    queue: str = "default",
    run_at: Due = None,
    transaction_id: Optional[str] = None,
    idempotency_key: Optional[str] = None,
    max_attempts: Optional[int] = None,
    ordering_key: Optional[str] = None,
    priority: int = 0,
    schema: Optional[str] = None,
) -> int:
    """Adds a job (its payload: anything json.dumps takes) on `conn`, in its transaction,
    and returns its id; a repeated idempotency key returns the first job's id."""
    query, params = _one(
        payload, queue, run_at, transaction_id, idempotency_key, max_attempts, ordering_key, priority, schema
    )
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return int(row[0])


def enqueue_many(
    conn: Union[Connection[Any], Cursor[Any]],
    payloads: Sequence[Any],
    *,
    queue: Each[str] = "default",
    run_at: Each[Due] = None,
    transaction_id: Each[Optional[str]] = None,
    idempotency_key: Each[Optional[str]] = None,
    max_attempts: Each[Optional[int]] = None,
    ordering_key: Each[Optional[str]] = None,
    priority: Each[int] = 0,
    schema: Optional[str] = None,
) -> list[int]:
    """Adds the jobs of `payloads` in one statement and returns their ids in order. Every
    other argument is one value for all, or a list of one per job. None is added unless
    every one is valid."""
    if not payloads:
        return []
    query, params = _many(
        payloads, queue, run_at, transaction_id, idempotency_key, max_attempts, ordering_key, priority, schema
    )
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return [int(i) for i in row[0]]


async def enqueue_async(
    conn: Union[AsyncConnection[Any], AsyncCursor[Any]],
    payload: Any,
    *,
    queue: str = "default",
    run_at: Due = None,
    transaction_id: Optional[str] = None,
    idempotency_key: Optional[str] = None,
    max_attempts: Optional[int] = None,
    ordering_key: Optional[str] = None,
    priority: int = 0,
    schema: Optional[str] = None,
) -> int:
    """enqueue on an async connection or cursor."""
    query, params = _one(
        payload, queue, run_at, transaction_id, idempotency_key, max_attempts, ordering_key, priority, schema
    )
    row = await (await conn.execute(query, params)).fetchone()
    assert row is not None
    return int(row[0])


async def enqueue_many_async(
    conn: Union[AsyncConnection[Any], AsyncCursor[Any]],
    payloads: Sequence[Any],
    *,
    queue: Each[str] = "default",
    run_at: Each[Due] = None,
    transaction_id: Each[Optional[str]] = None,
    idempotency_key: Each[Optional[str]] = None,
    max_attempts: Each[Optional[int]] = None,
    ordering_key: Each[Optional[str]] = None,
    priority: Each[int] = 0,
    schema: Optional[str] = None,
) -> list[int]:
    """enqueue_many on an async connection or cursor."""
    if not payloads:
        return []
    query, params = _many(
        payloads, queue, run_at, transaction_id, idempotency_key, max_attempts, ordering_key, priority, schema
    )
    row = await (await conn.execute(query, params)).fetchone()
    assert row is not None
    return [int(i) for i in row[0]]
