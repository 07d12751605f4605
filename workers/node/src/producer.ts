// The producer: jobs added on your own client, in your transaction, so that a job commits
// with the business write that asked for it, or goes with it.
//
// One statement a call: sendjobs_enqueue for one job, sendjobs_enqueue_many for many
// (docs/reference.md). Every parameter is cast in the SQL (node-postgres sends text), and
// the payload goes as JSON text: node-postgres would send a JS array as a Postgres array.
// Ids come back as strings: a bigint can exceed 2^53. Unnamed statements only, which
// PgBouncer in transaction mode passes.

import { ident } from "./worker.js";

/** A pg Client, a PoolClient (in a transaction: BEGIN on it first), or a Pool (each call its own transaction). */
export type Queryable = { query(text: string, values?: unknown[]): Promise<{ rows: any[] }> };

export type NewJob = {
  /** Anything JSON.stringify takes. */
  payload: unknown;
  queue?: string;
  /** Due at this time; or runAfterSeconds after the database's clock reads the call. */
  runAt?: Date;
  runAfterSeconds?: number;
  transactionId?: string;
  /** A repeat gives the first job's id. */
  idempotencyKey?: string;
  maxAttempts?: number;
  /** Jobs sharing it are claimed one at a time, in the order they were added. */
  orderingKey?: string;
  /** Minutes of head start in the claim order, 0 to 60. */
  priority?: number;
};

export type ProducerOptions = {
  /** The extension's schema; by default the functions are found by the search_path. */
  schema?: string;
};

const fn = (name: string, schema?: string) => (schema === undefined ? name : `${ident(schema)}.${name}`);

/** Adds a job on `client`, in its transaction, and returns its id. */
export async function enqueue(client: Queryable, job: NewJob, options: ProducerOptions = {}): Promise<string> {
  const { rows } = await client.query(
    `SELECT ${fn("sendjobs_enqueue", options.schema)}($1::jsonb, coalesce($2::text, 'default'),
            CASE WHEN $3::timestamptz IS NOT NULL THEN $3::timestamptz
                 WHEN $4::float8 IS NOT NULL THEN clock_timestamp() + make_interval(secs => $4::float8) END,
            $5::text, $6::text, $7::int4, $8::text, coalesce($9::int4, 0))::text AS id`,
    [JSON.stringify(job.payload), job.queue ?? null, job.runAt ?? null, job.runAfterSeconds ?? null,
     job.transactionId ?? null, job.idempotencyKey ?? null, job.maxAttempts ?? null, job.orderingKey ?? null,
     job.priority ?? null],
  );
  return rows[0].id;
}

/** Adds `jobs` in one statement and returns their ids in order. None is added unless every one is valid. */
export async function enqueueMany(client: Queryable, jobs: NewJob[], options: ProducerOptions = {}): Promise<string[]> {
  if (jobs.length === 0) return [];
  const column = <T>(value: (job: NewJob) => T | undefined) => jobs.map((job) => value(job) ?? null);
  const { rows } = await client.query(
    `SELECT ${fn("sendjobs_enqueue_many", options.schema)}($1::text[]::jsonb[], $2::text[],
            ARRAY(SELECT coalesce(due.at, clock_timestamp() + make_interval(secs => due.delay))
                    FROM unnest($3::timestamptz[], $4::float8[]) WITH ORDINALITY AS due (at, delay, ord)
                   ORDER BY due.ord),
            $5::text[], $6::text[], $7::int4[], $8::text[], $9::int4[])::text[] AS ids`,
    [jobs.map((job) => JSON.stringify(job.payload)), jobs.map((job) => job.queue ?? "default"),
     column((job) => job.runAt), column((job) => job.runAfterSeconds), column((job) => job.transactionId),
     column((job) => job.idempotencyKey), column((job) => job.maxAttempts), column((job) => job.orderingKey),
     jobs.map((job) => job.priority ?? 0)],
  );
  return rows[0].ids;
}
