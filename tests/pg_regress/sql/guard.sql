-- The terminal guard: a BEFORE UPDATE trigger that makes the terminal values of a status
-- column absorbing. A change of the column away from a terminal value is refused unless
-- it is a declared exit; same-value updates pass. sendjobs.guard_action decides what a
-- refusal does: skip (the default: the row is left as it was, the statement goes on, a
-- WARNING names the table, the key and the transition) or error (SQLSTATE 23514).

-- Start afresh, whatever an earlier test may have left behind.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sendjobs CASCADE;
DROP TABLE IF EXISTS transitions, orders, deliveries, notes, tasks, invoices;
DROP TYPE IF EXISTS delivery;
DROP FUNCTION IF EXISTS fail_on_flag();
RESET client_min_messages;
CREATE EXTENSION sendjobs;
\set SHOW_CONTEXT never

-------------------------------------------------------------------------------------
-- sendjobs_guard_terminal with its defaults
-------------------------------------------------------------------------------------

-- One row per transition to try: the row starts at from_status, one UPDATE moves every
-- row to its to_status.
CREATE TABLE transitions (
    id          int PRIMARY KEY,
    from_status text,
    to_status   text,
    status      text
);
INSERT INTO transitions (id, from_status, to_status) VALUES
    (1,  'pending', 'success'),   -- into a terminal value
    (2,  'pending', 'failed'),
    (3,  'success', 'success'),   -- same value
    (4,  'failed',  'failed'),
    (5,  'success', 'failed'),    -- terminal to terminal
    (6,  'failed',  'success'),
    (7,  'success', 'pending'),   -- out of a terminal value
    (8,  'failed',  'pending'),   -- the default exit
    (9,  'success', NULL),
    (10, NULL,      'success'),
    (11, 'success', 'queued');
UPDATE transitions SET status = from_status;

-- Defaults: column status, terminal values {success,failed}, one exit failed -> pending.
-- The guard is a trigger named zz_sendjobs_guard_terminal (BEFORE triggers fire in name
-- order: it runs after any other BEFORE trigger that might change the row).
SELECT sendjobs_guard_terminal('transitions');
SELECT tgname, pg_get_triggerdef(oid) AS definition
  FROM pg_trigger WHERE tgrelid = 'transitions'::regclass;

-- skip mode (the default): the refused rows are left as they were, with a WARNING each;
-- the others are updated. RETURNING lists the rows the UPDATE changed.
SHOW sendjobs.guard_action;
UPDATE transitions SET status = to_status RETURNING id, from_status, to_status;
SELECT id, from_status, to_status, status, status IS NOT DISTINCT FROM to_status AS allowed
  FROM transitions ORDER BY id;

-- error mode: a refused row fails the whole statement with SQLSTATE 23514 and a HINT;
-- no row changes, not even the allowed ones (rows 1 and 2). First every row goes back to
-- its from_status, with the guard switched off: a table's owner can disable the trigger
-- like any other.
ALTER TABLE transitions DISABLE TRIGGER zz_sendjobs_guard_terminal;
UPDATE transitions SET status = from_status;
ALTER TABLE transitions ENABLE TRIGGER zz_sendjobs_guard_terminal;
SET sendjobs.guard_action = error;
UPDATE transitions SET status = to_status WHERE id IN (1, 2, 5);
SELECT :'SQLSTATE' AS sqlstate;
SELECT count(*) FILTER (WHERE status IS NOT DISTINCT FROM from_status) AS unchanged_rows,
       count(*) AS rows
  FROM transitions;
-- The allowed transitions pass in error mode too.
UPDATE transitions SET status = to_status WHERE id IN (1, 2, 3, 4, 8, 10)
RETURNING id, from_status, to_status;
RESET sendjobs.guard_action;

-- Only the status column is guarded: other columns of a terminal row can change.
UPDATE transitions SET to_status = 'anything' WHERE id = 5 RETURNING id, status, to_status;
-- The guard judges the row as it will be written, after every other BEFORE trigger: an
-- UPDATE that never names the status column, but whose trigger moves it, is refused too.
CREATE FUNCTION fail_on_flag() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.to_status = 'flag' THEN NEW.status := 'failed'; END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER flag BEFORE UPDATE ON transitions FOR EACH ROW EXECUTE FUNCTION fail_on_flag();
UPDATE transitions SET to_status = 'flag' WHERE id = 5 RETURNING id, status, to_status;
SELECT id, status, to_status FROM transitions WHERE id = 5;
DROP TRIGGER flag ON transitions;
DROP FUNCTION fail_on_flag();

-------------------------------------------------------------------------------------
-- Custom column, terminal values and exits
-------------------------------------------------------------------------------------

-- An orders table whose column is "state", with three terminal values and two exits.
-- An exit may lead to another terminal value (delivered -> returned).
CREATE TABLE orders (order_no int PRIMARY KEY, state text NOT NULL);
INSERT INTO orders VALUES (1, 'delivered'), (2, 'delivered'), (3, 'returned'),
                          (4, 'returned'), (5, 'cancelled'), (6, 'open');
SELECT sendjobs_guard_terminal('orders', 'state', '{delivered,returned,cancelled}',
                               '{delivered:returned,returned:restocked}');
UPDATE orders SET state = CASE order_no
                            WHEN 1 THEN 'returned'     -- exit
                            WHEN 2 THEN 'cancelled'    -- refused
                            WHEN 3 THEN 'restocked'    -- exit
                            WHEN 4 THEN 'delivered'    -- refused
                            WHEN 5 THEN 'open'         -- refused: no exit from cancelled
                            WHEN 6 THEN 'cancelled'    -- not terminal yet: allowed
                          END
RETURNING order_no, state;
SELECT * FROM orders ORDER BY order_no;

-- Calling sendjobs_guard_terminal again replaces the table's guard (still one trigger):
-- here no exits at all.
SELECT sendjobs_guard_terminal('orders', 'state', '{delivered,returned,cancelled}', '{}');
SELECT count(*) AS guards, pg_get_triggerdef(min(oid)) AS definition
  FROM pg_trigger WHERE tgrelid = 'orders'::regclass;

-- A status column of any type: the values are compared as text. An enum, and a table
-- whose primary key has two columns (the WARNING names both).
CREATE TYPE delivery AS ENUM ('queued', 'done', 'dead');
CREATE TABLE deliveries (tenant text, no int, state delivery NOT NULL,
                         PRIMARY KEY (tenant, no));
INSERT INTO deliveries VALUES ('acme', 1, 'done');
SELECT sendjobs_guard_terminal('deliveries', 'state', '{done,dead}', '{dead:queued}');
UPDATE deliveries SET state = 'dead' RETURNING *;
-- A table without a primary key: the WARNING names the row by its ctid.
CREATE TABLE notes (status text);
INSERT INTO notes VALUES ('success');
SELECT sendjobs_guard_terminal('notes');
UPDATE notes SET status = 'failed' RETURNING *;
SELECT * FROM notes;

-------------------------------------------------------------------------------------
-- The trigger function used directly in CREATE TRIGGER
-------------------------------------------------------------------------------------

-- sendjobs_guard_terminal_trigger(status column, terminal values as a text[] literal,
-- exits as a text[] literal of from:to pairs), attached BEFORE UPDATE ... FOR EACH ROW.
CREATE TABLE tasks (id int PRIMARY KEY, state text NOT NULL, note text);
INSERT INTO tasks VALUES (1, 'done', NULL), (2, 'dead', NULL), (3, 'dead', NULL),
                         (4, 'queued', NULL);
CREATE TRIGGER tasks_terminal BEFORE UPDATE ON tasks FOR EACH ROW
  EXECUTE FUNCTION sendjobs_guard_terminal_trigger('state', '{done,dead}', '{dead:queued}');
UPDATE tasks SET state = 'dead' WHERE id = 1;     -- done -> dead: refused
UPDATE tasks SET state = 'done' WHERE id = 2;     -- dead -> done: refused
UPDATE tasks SET state = 'queued' WHERE id = 3;   -- dead -> queued: the exit
UPDATE tasks SET state = 'done' WHERE id = 4;     -- queued -> done: not terminal yet
UPDATE tasks SET state = 'done', note = 'same value' WHERE id = 1;  -- same value
SELECT * FROM tasks ORDER BY id;
SET sendjobs.guard_action = error;
UPDATE tasks SET state = 'dead' WHERE id = 4;
SELECT :'SQLSTATE' AS sqlstate, state FROM tasks WHERE id = 4;
RESET sendjobs.guard_action;

-- Without arguments the trigger function uses the defaults of sendjobs_guard_terminal:
-- column status, terminal {success,failed}, exit failed -> pending.
CREATE TABLE invoices (id int PRIMARY KEY, status text NOT NULL);
INSERT INTO invoices VALUES (1, 'success'), (2, 'failed');
CREATE TRIGGER invoices_terminal BEFORE UPDATE ON invoices FOR EACH ROW
  EXECUTE FUNCTION sendjobs_guard_terminal_trigger();
UPDATE invoices SET status = 'pending' RETURNING *;
SELECT * FROM invoices ORDER BY id;

DROP TABLE transitions, orders, deliveries, notes, tasks, invoices;
DROP TYPE delivery;
DROP EXTENSION sendjobs;
