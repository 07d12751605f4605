// What the Node.js drivers of bench/e2e.sh share: the packages of the bench's npm cache
// (E2E_NODE_MODULES: target/e2e-cache/npm/node_modules), a clock in milliseconds with
// sub-millisecond digits, the steady stream, and the one JSON line each prints.
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

export const need = createRequire(path.join(process.env.E2E_NODE_MODULES, "index.js"));
export const load = async (name) => import(pathToFileURL(need.resolve(name)).href);
export const url = process.env.DATABASE_URL;
export const nowMs = () => performance.timeOrigin + performance.now();
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// RATE jobs a second for SECONDS, each through `add(t)` (its own transaction); then waits
// until `seen` holds them all.
export async function stream(rate, seconds, add, seen) {
  await sleep(1000); // the worker idle, listening
  const total = Math.floor(rate * seconds);
  const started = performance.now();
  for (let i = 0; i < total; i++) {
    await sleep(Math.max(0, started + (i * 1000) / rate - performance.now()));
    await add(nowMs());
  }
  while (seen.length < total) await sleep(10);
  return total;
}

export function done(out) {
  console.log(JSON.stringify(out));
  process.exit(0);
}
