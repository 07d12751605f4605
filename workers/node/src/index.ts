// sendjobs for Node.js (node-postgres): jobs added in your transaction, and a worker.
export { enqueue, enqueueMany } from "./producer.js";
export type { NewJob, ProducerOptions, Queryable } from "./producer.js";
export { SENT, Worker, failed, retry } from "./worker.js";
export type { Handler, Job, Outcome, WorkerOptions } from "./worker.js";
