// The console's browser test, run by tests/console/run.sh inside a throwaway cluster
// with tests/console/workload.sql loaded and three consoles started:
//   CONSOLE_ADMIN   as console_admin (monitor + admin), with the operator token;
//   CONSOLE_MONITOR as console_monitor (monitor only), with the operator token;
//   CONSOLE_NOTOKEN as console_admin, without a token.
// Headless Debian chromium through playwright-core clicks what an operator would; after
// every click the database is read (node-postgres, as the cluster's superuser) and must
// have changed exactly as intended, and every refused request must have changed nothing.
import { chromium } from "playwright-core";
import pg from "pg";
import { mkdirSync, readFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";

const ADMIN = process.env.CONSOLE_ADMIN;
const MONITOR = process.env.CONSOLE_MONITOR;
const NOTOKEN = process.env.CONSOLE_NOTOKEN;
const TOKEN = process.env.SENDJOBS_CONSOLE_TOKEN;
const SHOTS = process.env.SCREENSHOTS;
const db = new pg.Client({ host: process.env.PGHOST, port: +process.env.PGPORT, user: process.env.PGUSER, database: process.env.PGDATABASE });

let checks = 0;
function check(cond, what) {
  if (!cond) { throw new Error(`FAILED: ${what}`); }
  checks += 1;
  console.log(`   ok: ${what}`);
}
async function one(sql, params = []) { return (await db.query(sql, params)).rows; }
/** Everything an action could change: each job's status and what it redrives, each
 * queue's pause, each business row. */
async function snapshot() {
  const jobs = await one("SELECT id::int, status, redrive_of::int FROM send_jobs ORDER BY id");
  const queues = await one("SELECT queue, paused FROM sendjobs_queues ORDER BY queue");
  const rows = await one("SELECT id, status FROM transactions ORDER BY id");
  return JSON.stringify({ jobs, queues, rows });
}
/** A raw POST with the given cookies (name=value pairs) and form fields. */
async function post(base, path, cookies, fields) {
  const body = new URLSearchParams(fields).toString();
  const r = await fetch(base + path, {
    method: "POST", redirect: "manual", body,
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: cookies.join("; ") },
  });
  post.lastText = await r.text();
  return r.status;
}
/** A request with headers fetch would not let one set (Host): its status and headers. */
function raw(base, method, path, headers, body = "") {
  const url = new URL(base + path);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers }));
    });
    req.on("error", reject);
    req.end(body);
  });
}
/** A fresh CSRF cookie and its form field, as a browser gets them from a page. */
async function csrfPair(base) {
  const r = await fetch(base + "/queues");
  const cookie = r.headers.get("set-cookie").split(";")[0];
  const field = (await r.text()).match(/name="csrf" value="([0-9a-f]+)"/)[1];
  return { cookie, field };
}
/** The headers docs/console.md promises on every response. */
function promisedHeaders(h) {
  return (h["content-security-policy"] || "").includes("frame-ancestors 'none'") && h["x-frame-options"] === "DENY" &&
         h["x-content-type-options"] === "nosniff" && h["referrer-policy"] === "no-referrer" && h["cache-control"] === "no-store";
}
/** The queues paused now, by name. */
async function pausedQueues() {
  return (await one("SELECT queue FROM sendjobs_queues WHERE paused ORDER BY queue")).map((r) => r.queue);
}
async function signIn(page, base, name) {
  await page.goto(base + "/queues");
  await page.fill("input[name=operator]", name);
  await page.fill("input[name=token]", TOKEN);
  await Promise.all([page.waitForNavigation(), page.click("header button[type=submit]")]);
  check((await page.textContent("header")).includes(`operator ${name}`), `${name} is signed in on ${base}`);
}

await db.connect();
mkdirSync(SHOTS, { recursive: true });
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const external = [];
  page.on("request", (r) => { if (!r.url().startsWith(ADMIN)) { external.push(r.url()); } });

  console.log("== the queues page finds the failing queue");
  await page.goto(ADMIN + "/queues");
  const failing = await page.getAttribute("tr.failing", "data-queue");
  check(failing === "acme", "the failing queue is acme");
  check((await page.textContent("#queues")).includes("globex"), "globex, with jobs in flight, is listed");
  check((await page.textContent("#queues tr[data-queue=globex]")).includes("rate 1/min, burst 1"),
        "its rate reads as it was meant: 1/min");
  await signIn(page, ADMIN, "test-operator");
  await page.waitForSelector("#live-status:has-text('updated')", { timeout: 8000 });
  check(true, "the live refresh updated the queues page");
  await page.screenshot({ path: `${SHOTS}/queues.png` });
  const fits = async () => page.evaluate(() => document.documentElement.scrollWidth);
  check(await fits() <= 1280, `the queues page, its hour charts included, fits a 1280-px screen (${await fits()} px)`);

  console.log("== open a failed job of acme and redrive it");
  await Promise.all([page.waitForNavigation(), page.click("tr.failing a")]);
  check((await page.$$("#failed tbody tr")).length === 6, "the queue page lists acme's 6 failed jobs");
  await page.screenshot({ path: `${SHOTS}/queue.png` });
  check(await fits() <= 1280, `a queue's page fits a 1280-px screen (${await fits()} px)`);
  await Promise.all([page.waitForNavigation(), page.click("#failed tbody tr:first-child td a")]);
  const jobId = +page.url().split("/").pop();
  check((await page.textContent("#status")) === "failed", `job ${jobId} shows failed`);
  check((await page.textContent("#business")).includes("failed"), "its business row shows failed");
  check((await page.textContent("#event")).startsWith("failed"), "its outbox event is shown");
  await page.screenshot({ path: `${SHOTS}/job.png` });
  let before = JSON.parse(await snapshot());
  await Promise.all([page.waitForNavigation(), page.click("#redrive")]);
  check((await page.textContent("#result")).includes("Redrove 1 job"), "the console says it redrove the job");
  let after = JSON.parse(await snapshot());
  const added = after.jobs.filter((j) => !before.jobs.some((b) => b.id === j.id));
  check(added.length === 1 && added[0].redrive_of === jobId && added[0].status === "pending",
        `exactly one new job, pending, redriving ${jobId}`);
  check(JSON.stringify(after.jobs.filter((j) => j.id !== added[0].id)) === JSON.stringify(before.jobs),
        "no other job changed");
  const tx = (await one("SELECT transaction_id FROM send_jobs WHERE id = $1", [jobId]))[0].transaction_id;
  check((await one("SELECT status FROM transactions WHERE id = $1", [tx]))[0].status === "pending",
        `its business row ${tx} went back to pending`);

  console.log("== redrive two failed jobs in bulk");
  await page.goto(ADMIN + "/queue?name=acme");
  const boxes = await page.$$("#failed input[name=id]");
  check(boxes.length === 5, "5 failed jobs are still selectable (the redriven one is not)");
  await page.check("#select-all");
  check((await page.$$eval("#failed input[name=id]", (all) => all.filter((b) => b.checked).length)) === 5,
        "select all checks the 5 boxes");
  await page.uncheck("#select-all");
  check((await page.$$("#failed input[name=id]:checked")).length === 0, "and unchecks them");
  const picked = [];
  for (const box of boxes.slice(0, 2)) { await box.check(); picked.push(+(await box.getAttribute("value"))); }
  before = JSON.parse(await snapshot());
  await Promise.all([page.waitForNavigation(), page.click("#redrive")]);
  after = JSON.parse(await snapshot());
  const bulk = after.jobs.filter((j) => !before.jobs.some((b) => b.id === j.id));
  check(bulk.length === 2 && bulk.map((j) => j.redrive_of).sort().join() === picked.sort().join(),
        `two new jobs, redriving exactly ${picked.join(" and ")}`);

  console.log("== cancel a pending job");
  const victim = (await one("SELECT id::int FROM send_jobs WHERE queue = 'globex' AND status = 'pending' ORDER BY id LIMIT 1"))[0].id;
  await page.goto(`${ADMIN}/jobs/${victim}`);
  before = JSON.parse(await snapshot());
  await Promise.all([page.waitForNavigation(), page.click("#cancel")]);
  after = JSON.parse(await snapshot());
  check(after.jobs.find((j) => j.id === victim).status === "cancelled", `job ${victim} is cancelled`);
  check(JSON.stringify(after.jobs.filter((j) => j.id !== victim)) === JSON.stringify(before.jobs.filter((j) => j.id !== victim)),
        "no other job changed");

  console.log("== pause a queue");
  await page.goto(ADMIN + "/queue?name=initech");
  await Promise.all([page.waitForNavigation(), page.click("#pause")]);
  const paused = await one("SELECT queue FROM sendjobs_queues WHERE paused ORDER BY queue");
  check(JSON.stringify(paused) === JSON.stringify([{ queue: "initech" }]), "initech, and only it, is paused");
  await page.goto(ADMIN + "/queue?name=initech");
  check(await page.isVisible("#resume"), "its page offers to resume it");

  console.log("== a queue named '..' (a path segment a browser would normalise away)");
  await page.goto(ADMIN + "/queue?name=..");
  await Promise.all([page.waitForNavigation(), page.click("#pause")]);
  const dots = await one("SELECT queue FROM sendjobs_queues WHERE paused ORDER BY queue");
  check(JSON.stringify(dots) === JSON.stringify([{ queue: ".." }, { queue: "initech" }]), "'..' is paused from its own page");
  await page.goto(ADMIN + "/queue?name=..");
  await Promise.all([page.waitForNavigation(), page.click("#resume")]);
  const undotted = await one("SELECT queue FROM sendjobs_queues WHERE paused ORDER BY queue");
  check(JSON.stringify(undotted) === JSON.stringify([{ queue: "initech" }]), "and resumed from it");

  console.log("== names that look alike draw differently; a line break names its own queue");
  await page.goto(ADMIN + "/queues");
  const drawn = Object.fromEntries(await page.$$eval("#queues tbody tr", (rows) => rows.map((r) =>
    [r.dataset.queue, { text: r.querySelector("td a").innerText, marked: !!r.querySelector("td a .esc, td a .beyond-ascii") }])));
  const lookalikes = ["acme\u200b", "\u202eemca", " acme", "acme ", "\u0430cme", "acme  corp"];
  check(lookalikes.every((name) => drawn[name] && drawn[name].marked), "each look-alike of acme, or of acme corp, is listed, marked");
  const texts = ["acme", "acme corp", ...lookalikes].map((name) => drawn[name].text);
  check(new Set(texts).size === 8 && !texts.some((t) => /[\u200b\u202e]/.test(t)) && drawn.acme.text === "acme",
        `the eight draw as eight texts, none with an invisible or an override (${JSON.stringify(texts)})`);
  const forged = (await one("SELECT queue FROM sendjobs_queues WHERE queue LIKE 'forged%'"))[0].queue;
  const pausedBefore = await pausedQueues();
  await page.goto(ADMIN + "/queue?name=" + encodeURIComponent(forged));
  check(!(await page.title()).includes("\n") && (await page.title()).includes("\\u{a}"), "its page's title shows the line break as \\u{a}");
  await Promise.all([page.waitForNavigation(), page.click("#pause")]);
  check(JSON.stringify(await pausedQueues()) === JSON.stringify([...pausedBefore, forged].sort()),
        "the queue with a line break in its name, and only it, is paused from its page");
  await page.goto(ADMIN + "/queue?name=" + encodeURIComponent(forged));
  await Promise.all([page.waitForNavigation(), page.click("#resume")]);
  check(JSON.stringify(await pausedQueues()) === JSON.stringify(pausedBefore), "and resumed from it");
  await page.goto(ADMIN + "/queue?name=%20acme");
  await Promise.all([page.waitForNavigation(), page.click("a[href^='/jobs?queue=']")]);
  check((await page.$$("#jobs tbody tr")).length === 3, "the jobs of ' acme' are its 3, not acme's");
  await page.goto(ADMIN + "/jobs?queue=" + encodeURIComponent(forged));
  await page.selectOption("select[name=status]", "pending");
  await Promise.all([page.waitForNavigation(), page.click("#search")]);
  const forgedRows = await page.$$eval("#jobs tbody tr td:nth-child(2)", (cells) => cells.map((c) => c.textContent));
  check(forgedRows.length === 1 && forgedRows[0].startsWith("forged\\u{a}2026"),
        `the search for the queue with a line break, sent again from its form, still finds its job (${JSON.stringify(forgedRows)})`);
  const reversed = (await one("SELECT job_id::int AS id FROM send_job_keys WHERE idempotency_key = 'reversed'"))[0].id;
  await page.goto(`${ADMIN}/jobs/${reversed}`);
  const payloadText = await page.textContent("#payload");
  check(!payloadText.includes("\u202e") && payloadText.includes("\\u{202e}evil.example"), "a payload's override is shown, not obeyed");

  console.log("== the queues' figures are read once for every page");
  // The consoles of console_admin log every statement (workload.sql) in the server's log.
  const statsCalls = () => (readFileSync(`${process.env.SENDJOBS_CLUSTER_DIR}/data.log`, "utf8")
    .match(/FROM \S+\.sendjobs_stats\(\)/g) || []).length;
  const callsBefore = statsCalls();
  const asked = Date.now();
  for (let i = 0; i < 30; i++) {
    await fetch(ADMIN + (i % 2 ? "/queues/live" : "/queue?name=acme"));
  }
  const seconds = (Date.now() - asked) / 1000;
  const callsMade = statsCalls() - callsBefore;
  // Each of the two consoles of console_admin reads them every 5 s while looked at.
  check(callsMade <= 2 * (Math.ceil(seconds / 5) + 1),
        `30 queue pages read sendjobs_stats ${callsMade} times in ${seconds.toFixed(1)} s, not once each`);
  await page.goto(ADMIN + "/queues");
  check(/read \d+ s ago, in \d+ ms/.test(await page.textContent("#figures-age")), "the page says how old its counts are");

  console.log("== a job's earlier attempts");
  const retried = (await one("SELECT job_id::int AS id FROM send_job_keys WHERE idempotency_key = 'acme/retried'"))[0].id;
  await page.goto(`${ADMIN}/jobs/${retried}`);
  const attemptRows = await page.$$eval("#attempts tbody tr", (rows) => rows.map((r) => r.textContent));
  check(attemptRows.length === 3 && /timeout after 30 s/.test(attemptRows[0]) && /lease expired/.test(attemptRows[1])
        && /partner answered 500/.test(attemptRows[2]),
        `its page lists its 3 earlier attempts: a timeout, a lost lease, a 500 (${JSON.stringify(attemptRows)})`);

  console.log("== the queue list, narrowed and ordered");
  await page.goto(ADMIN + "/queues");
  const listed = async () => page.$$eval("#queues tbody tr", (rows) => rows.map((r) => r.dataset.queue));
  await page.selectOption("select[name=only]", "failing");
  await page.selectOption("select[name=sort]", "failing");
  await Promise.all([page.waitForNavigation(), page.click("#filter")]);
  check(JSON.stringify(await listed()) === JSON.stringify(["acme", "ledger"]), "failing, most failures first: acme (6), then ledger (1)");
  check((await page.textContent("#shown")).includes("2 of"), "the page says how many it shows of how many");
  await page.waitForSelector("#live-status:has-text('updated')", { timeout: 8000 });
  check(JSON.stringify(await listed()) === JSON.stringify(["acme", "ledger"]), "the live refresh keeps the filter");
  await page.goto(ADMIN + "/queues?find=ACME");
  check(JSON.stringify((await listed()).sort()) === JSON.stringify([" acme", "acme", "acme ", "acme  corp", "acme corp", "acme\u200b"].sort()),
        "names that hold 'ACME' in any case (not the Cyrillic one, not the reversed one)");
  await page.goto(ADMIN + "/queues?only=limited");
  const limitedNow = await listed();
  check(JSON.stringify(limitedNow) === JSON.stringify(["globex", "initech"]),
        `limited now: globex at its cap of 3, initech paused (${JSON.stringify(limitedNow)})`);
  check((await fetch(ADMIN + "/queues?only=everything")).status === 400, "an unknown filter: 400");

  console.log("== a partner's limits, set as people write them");
  await page.goto(ADMIN + "/queue?name=globex");
  check(await page.inputValue("#limits input[name=rate]") === "1/min" && await page.inputValue("#limits input[name=max_in_flight]") === "3",
        "globex's form holds its limits: cap 3, rate 1/min");
  await page.fill("#limits input[name=max_in_flight]", "5");
  await page.fill("#limits input[name=rate]", "20/s");
  await page.fill("#limits input[name=burst]", "2");
  await Promise.all([page.waitForNavigation(), page.click("#set-limits")]);
  const globexLimits = async () => (await one("SELECT max_in_flight, rate, burst FROM sendjobs_queues WHERE queue = 'globex'"))[0];
  let set = await globexLimits();
  check(set.max_in_flight === 5 && set.rate === 20 && set.burst === 2, `globex: cap 5, 20 a second, bursts of 2 (${JSON.stringify(set)})`);
  await page.goto(ADMIN + "/queue?name=globex");
  await page.fill("#limits input[name=rate]", "fast");
  const refusedLimits = await Promise.all([page.waitForNavigation(), page.click("#set-limits")]);
  set = await globexLimits();
  check(refusedLimits[0].status() === 400 && set.max_in_flight === 5 && set.rate === 20 && set.burst === 2,
        "a rate written 'fast': 400, nothing changed");

  console.log("== the header's box: a key of digits, a key, and a monitor who cannot search keys");
  const digits = (await one("SELECT job_id::int AS id FROM send_job_keys WHERE idempotency_key = '424242'"))[0].id;
  for (const [typed, want] of [["424242", digits], [" acme/1 ", null]]) {
    await page.goto(ADMIN + "/queues");
    await page.fill("header input[name=q]", typed);
    await Promise.all([page.waitForNavigation(), page.press("header input[name=q]", "Enter")]);
    const id = want ?? (await one("SELECT job_id::int AS id FROM send_job_keys WHERE idempotency_key = 'acme/1'"))[0].id;
    check(page.url().endsWith(`/jobs/${id}`), `${JSON.stringify(typed)} in the box opens job ${id}`);
  }

  console.log("== a stopped ordering key, seen and let go");
  const [stopper, waiting] = (await one("SELECT id::int FROM send_jobs WHERE ordering_key = 'acct-9' ORDER BY id")).map((r) => r.id);
  await page.goto(`${ADMIN}/jobs/${waiting}`);
  check((await page.textContent("#key-stopped")).includes(`Stopped by job ${stopper}`), `the waiting job's page says job ${stopper} stops its key`);
  await page.goto(ADMIN + "/queue?name=ledger");
  check((await page.textContent("#blocked")).includes("acct-9") && (await page.$(`#blocked a[href='/jobs/${stopper}']`)) !== null,
        "ledger's page lists acct-9, stopped by that job");
  // A stale page: the key named with a job that no longer (or never) stopped it.
  const ljar = (await context.cookies(ADMIN)).map((c) => `${c.name}=${c.value}`);
  const lfield = await page.getAttribute("input[name=csrf]", "value");
  check((await post(ADMIN, "/actions/unblock", ljar, { csrf: lfield, key: "acct%2D9", job: stopper + 1000, queue: "ledger" })) === 409 &&
        (await one("SELECT count(*)::int AS n FROM sendjobs_blocked_keys"))[0].n === 1,
        "letting the key go while another job stops it: 409, still stopped");
  check((await post(ADMIN, "/actions/unblock", ljar, { csrf: lfield, key: "acct-9", job: stopper, queue: "ledger" })) === 400 &&
        (await one("SELECT count(*)::int AS n FROM sendjobs_blocked_keys"))[0].n === 1,
        "a key not percent-encoded: 400, still stopped");
  before = JSON.parse(await snapshot());
  await Promise.all([page.waitForNavigation(), page.click("#blocked .unblock")]);
  check((await page.textContent("#result")).includes("goes on"), "the console says the key goes on");
  check((await one("SELECT count(*)::int AS n FROM sendjobs_blocked_keys"))[0].n === 0 && (await snapshot()) === JSON.stringify(before),
        "acct-9 is no longer stopped, and nothing else changed");

  console.log("== search by transaction id");
  await page.goto(ADMIN + "/jobs");
  await page.fill("input[name=transaction_id]", "tx-12");
  await Promise.all([page.waitForNavigation(), page.click("#search")]);
  const found = await page.$$eval("#jobs tbody tr", (rows) => rows.map((r) => r.dataset.job));
  check(found.length === 1, "one job has transaction tx-12");
  await page.screenshot({ path: `${SHOTS}/search.png` });
  check(external.length === 0, `the pages loaded nothing from elsewhere (${external.join(", ")})`);

  console.log("== refused requests change nothing");
  const cookies = await context.cookies(ADMIN);
  const session = cookies.find((c) => c.name === "sjc_operator");
  const csrf = cookies.find((c) => c.name === "sjc_csrf");
  const field = await page.getAttribute("input[name=csrf]", "value");
  const target = (await one("SELECT id::int FROM send_jobs WHERE queue = 'globex' AND status = 'pending' ORDER BY id LIMIT 1"))[0].id;
  const sessionCookie = `sjc_operator=${session.value}`, csrfCookie = `sjc_csrf=${csrf.value}`;
  // A cookie of one's own choosing (a sibling host can plant one) and the field a page
  // hands out for it to one without the session.
  const planted = await csrfPair(ADMIN);
  const cases = [
    ["cancel with a planted cookie and the field a page hands out for it", "/actions/cancel", [planted.cookie, sessionCookie], { csrf: planted.field, id: target }],
    ["cancel without the operator session", "/actions/cancel", [csrfCookie], { csrf: field, id: target }],
    ["cancel with a wrong CSRF token", "/actions/cancel", [csrfCookie, sessionCookie], { csrf: "0".repeat(64), id: target }],
    ["cancel with another cookie's CSRF token", "/actions/cancel", [`sjc_csrf=${"a".repeat(32)}`, sessionCookie], { csrf: field, id: target }],
    ["cancel without a CSRF token", "/actions/cancel", [csrfCookie, sessionCookie], { id: target }],
    ["pause with a forged session", "/actions/pause", [csrfCookie, sessionCookie.replace("test-operator", "mallory")], { csrf: field, queue: "globex" }],
    ["redrive without the operator session", "/actions/redrive", [csrfCookie], { csrf: field, id: picked[0] === 1 ? 3 : 1 }],
  ];
  for (const [what, path, jar, fields] of cases) {
    before = await snapshot();
    const status = await post(ADMIN, path, jar, fields);
    check(status === 403 && (await snapshot()) === before, `${what}: 403, nothing changed`);
  }
  before = await snapshot();
  check((await post(ADMIN, "/actions/cancel", [csrfCookie, sessionCookie], { csrf: field, id: "abc" })) === 400 &&
        (await snapshot()) === before, "a non-numeric job id: 400, nothing changed");
  const { cookie: fresh, field: freshField } = await csrfPair(ADMIN);
  check((await post(ADMIN, "/signin", [fresh], { csrf: freshField, operator: "x", token: TOKEN + "x" })) === 403,
        "a wrong token does not sign in");
  check((await fetch(`${ADMIN}/actions/cancel?id=${target}`)).status === 405, "an action by GET: 405");
  // DNS rebinding: another site's name pointed at 127.0.0.1 brings its own Host.
  const port = new URL(ADMIN).port;
  const rebound = await raw(ADMIN, "GET", "/queues", { host: `evil.example:${port}` });
  check(rebound.status === 403 && promisedHeaders(rebound.headers), "a page asked for under another Host: 403, with the promised headers");
  // Another site's page may link to the console, not load it as an image (which could
  // make it search its history in a loop).
  const searchPath = "/jobs?transaction_id=nothing";
  const asImage = await raw(ADMIN, "GET", searchPath, { host: new URL(ADMIN).host, "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "image" });
  const asLink = await raw(ADMIN, "GET", searchPath, { host: new URL(ADMIN).host, "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "document" });
  check(asImage.status === 403 && asLink.status === 200, "a search loaded as another site's image: 403; a link followed from it: 200");
  // A form of another origin, or of another port of this host (the same site to a browser).
  const form = new URLSearchParams({ csrf: field, id: target }).toString();
  const formHeaders = { host: new URL(ADMIN).host, cookie: [csrfCookie, sessionCookie].join("; "),
                        "content-type": "application/x-www-form-urlencoded", "content-length": Buffer.byteLength(form) };
  for (const [what, extra] of [["an Origin of another port", { origin: `http://127.0.0.1:${Number(port) + 1}` }],
                               ["Sec-Fetch-Site same-site", { "sec-fetch-site": "same-site" }]]) {
    before = await snapshot();
    const refused = await raw(ADMIN, "POST", "/actions/cancel", { ...formHeaders, ...extra }, form);
    check(refused.status === 403 && promisedHeaders(refused.headers) && (await snapshot()) === before,
          `cancel with ${what}: 403 with the promised headers, nothing changed`);
  }
  // The control: the same session and CSRF pair does act (so the refusals above are the checks').
  check((await post(ADMIN, "/actions/cancel", [csrfCookie, sessionCookie], { csrf: field, id: target })) === 200 &&
        (await one("SELECT status FROM send_jobs WHERE id = $1", [target]))[0].status === "cancelled",
        "the control: with session and CSRF token the same POST cancels");

  console.log("== the monitor-only console offers no action and refuses them");
  const mpage = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  await signIn(mpage, MONITOR, "watcher");
  await mpage.goto(MONITOR + "/queue?name=acme");
  check((await mpage.$$("#failed input[name=id], #redrive, #pause, #resume")).length === 0, "no checkbox, redrive or pause on acme");
  check((await mpage.textContent("main")).includes("Not allowed: unblock") && (await mpage.textContent("main")).includes("Not allowed: limit") &&
        (await mpage.$$("#limits")).length === 0, "the page says unblock and limit are not allowed, and has no limits form");
  check((await mpage.textContent("main")).includes("Not allowed: redrive"), "the page says redrive is not allowed");
  await mpage.fill("header input[name=q]", "acme/1");
  await Promise.all([mpage.waitForNavigation(), mpage.press("header input[name=q]", "Enter")]);
  check((await mpage.textContent("#box-note")).includes("may not read send_job_keys"),
        "a key in the box: the page says the role cannot search keys");
  await mpage.goto(MONITOR + "/queue?name=acme");
  const pending = (await one("SELECT id::int FROM send_jobs WHERE queue = 'globex' AND status = 'in_flight' ORDER BY id LIMIT 1"))[0].id;
  await mpage.goto(`${MONITOR}/jobs/${pending}`);
  check((await mpage.$$("#cancel")).length === 0, "no cancel button on a job in flight");
  check((await mpage.textContent("#payload-hidden")).includes("may not read send_jobs.payload"), "the payload is hidden");
  const mcookies = await mpage.context().cookies(MONITOR);
  const mjar = mcookies.map((c) => `${c.name}=${c.value}`);
  const mfield = await mpage.getAttribute("input[name=csrf]", "value");
  for (const [path, fields] of [["/actions/cancel", { id: pending }], ["/actions/redrive", { id: 3 }], ["/actions/pause", { queue: "globex" }]]) {
    before = await snapshot();
    const status = await post(MONITOR, path, mjar, { csrf: mfield, ...fields });
    check(status === 403 && (await snapshot()) === before, `monitor-only ${path}: 403, nothing changed`);
  }

  console.log("== without a token the console only shows");
  const npage = await (await browser.newContext()).newPage();
  await npage.goto(NOTOKEN + "/queue?name=acme");
  check((await npage.textContent("main")).includes("Actions are disabled"), "the page says actions are disabled");
  check((await npage.$$("input[name=token], #redrive, #pause")).length === 0, "no sign-in and no action");
  // No form on its pages carries a CSRF token; the token check comes first and says so.
  before = await snapshot();
  check((await post(NOTOKEN, "/actions/pause", [], { queue: "globex" })) === 403 && post.lastText.includes("actions are disabled") &&
        (await snapshot()) === before, "a pause without a token configured: 403 (actions are disabled), nothing changed");
  check((await post(NOTOKEN, "/signin", [], { operator: "x", token: "" })) === 403 && post.lastText.includes("actions are disabled"),
        "no sign-in without a token configured");
  // Its role may read payloads and the link, but nobody is signed in: neither is shown.
  const linked = (await one("SELECT id::int FROM send_jobs WHERE transaction_id IS NOT NULL ORDER BY id LIMIT 1"))[0].id;
  await npage.goto(`${NOTOKEN}/jobs/${linked}`);
  check((await npage.textContent("#payload-hidden")).includes("sign in") && (await npage.$$("#payload, #business")).length === 0,
        "without a signed-in operator, no payload and no business row");

  console.log("== a connection kept alive by a request every quarter second ends with its life");
  // The console without a token gives a connection 4 s (run.sh); this one sends a whole
  // request every quarter second, each within the head's time, and reads every answer
  // (two answers at least show it was kept alive, however slow the machine).
  const kept = new URL(NOTOKEN);
  const keptAlive = net.connect(+kept.port, kept.hostname);
  let answers = 0;
  keptAlive.on("data", (chunk) => { answers += (chunk.toString().match(/HTTP\/1\.1 200/g) || []).length; });
  keptAlive.on("error", () => {});
  const keptClosed = new Promise((resolve) => keptAlive.on("close", resolve));
  const ticker = setInterval(() => keptAlive.write(`GET /assets/console.css HTTP/1.1\r\nHost: ${kept.host}\r\n\r\n`), 250);
  const endedInTime = await Promise.race([keptClosed.then(() => true), new Promise((r) => setTimeout(() => r(false), 60000))]);
  clearInterval(ticker);
  keptAlive.destroy();
  check(endedInTime && answers >= 2, `the console closed it (after ${answers} answers), kept alive or not`);

  console.log("== half-sent requests neither lock the operator out nor stay open");
  // The console without a token runs with 16 connections and 3 s for a request's head
  // (run.sh); 48 connections each send half a head and no more, all connected before
  // the operator's request.
  const slow = new URL(NOTOKEN);
  let closed = 0;
  const halfSent = await Promise.all(Array.from({ length: 48 }, () => new Promise((resolve, reject) => {
    const s = net.connect(+slow.port, slow.hostname, () => s.write(`GET /queues HTTP/1.1\r\nHost: ${slow.host}\r\nX-Slow: `, () => resolve(s)));
    s.on("close", () => { closed += 1; });
    s.on("error", (e) => { if (e.code !== "ECONNRESET") { reject(e); } });
  })));
  const served = await fetch(NOTOKEN + "/queues", { signal: AbortSignal.timeout(60000) });
  check(served.status === 200, "the operator's page is served while 48 half-sent requests wait (16 connections at most)");
  const deadline = Date.now() + 60000;
  while (closed < halfSent.length && Date.now() < deadline) { await new Promise((r) => setTimeout(r, 200)); }
  check(closed === halfSent.length, `the console closed the half-sent requests (${closed} of ${halfSent.length})`);

  console.log(`console browser test: ${checks} checks passed`);
} finally {
  await browser.close();
  await db.end();
}
