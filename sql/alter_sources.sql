-- ALTER TABLE on a streaming flow's source after its graph is cached in
-- every process: renames of a value, key and time column, then UPDATE and
-- DELETE (recompute and refill), a sink TRUNCATE and a worker restart
-- (refill from the source).  Columns are found by number: before, the
-- refill looked them up by their old names ("cannot cast type ... to double
-- precision", the flow failed for good).  Batching alongside, and the
-- oracle after each step.
SET TimeZone = 'UTC';
CREATE TABLE alt_m (ts timestamptz, device int, temperature float8);
INSERT INTO alt_m SELECT '2024-01-01'::timestamptz + i * interval '10 seconds', i % 5, i
  FROM generate_series(1, 1000) i;
SELECT flowpg.create_flow('alt_' || m, 'alt_out_' || m,
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, avg(temperature) AS a
      FROM alt_m GROUP BY 1, 2$$, mode => m) > 0 AS created
  FROM unnest(ARRAY['streaming', 'batching']) m;
-- the backfills done: the writes below take the writers' path
SELECT flowpg.flush_flow(flow_name) >= 0 AS backfilled FROM flowpg.flows WHERE flow_name LIKE 'alt\_%' ORDER BY 1;
INSERT INTO alt_m VALUES ('2024-01-01 00:00:05+00', 1, 5);
SELECT flow_name, flowpg.flush_flow(flow_name) >= 0 AS flushed, flow_mismatches(flow_name) AS mismatches
  FROM flowpg.flows WHERE flow_name LIKE 'alt\_%' ORDER BY 1;

-- the value, key and time columns renamed; changes that recompute and refill
ALTER TABLE alt_m RENAME COLUMN temperature TO tc;
ALTER TABLE alt_m RENAME COLUMN device TO dev;
ALTER TABLE alt_m RENAME COLUMN ts TO t;
UPDATE alt_m SET tc = tc + 1 WHERE dev = 2;
DELETE FROM alt_m WHERE dev = 3 AND tc < 100;
INSERT INTO alt_m VALUES ('2024-01-01 00:30:05+00', 1, 5);
SELECT flow_name, state, flowpg.flush_flow(flow_name) >= 0 AS flushed, flow_mismatches(flow_name) AS mismatches
  FROM flowpg.flows WHERE flow_name LIKE 'alt\_%' ORDER BY 1;

-- a sink TRUNCATE and a worker restart: the state is refilled from the source
TRUNCATE alt_out_streaming;
SELECT count(pg_terminate_backend(pid)) >= 0 AS restarted
  FROM pg_stat_activity WHERE backend_type = 'flowpg worker' AND datname = current_database();
INSERT INTO alt_m VALUES ('2024-01-01 00:40:05+00', 4, 5);
SELECT flow_name, state, flowpg.flush_flow(flow_name) >= 0 AS flushed, flow_mismatches(flow_name) AS mismatches
  FROM flowpg.flows WHERE flow_name LIKE 'alt\_%' ORDER BY 1;

-- the table renamed, an unrelated column added (a rewrite) and dropped
ALTER TABLE alt_m RENAME TO alt_mm;
ALTER TABLE alt_mm ADD COLUMN extra float8 DEFAULT random();
ALTER TABLE alt_mm DROP COLUMN extra;
INSERT INTO alt_mm VALUES ('2024-01-01 00:50:05+00', 4, 5);
UPDATE alt_mm SET tc = tc * 2 WHERE dev = 4;
SELECT flow_name, state, flowpg.flush_flow(flow_name) >= 0 AS flushed, flow_mismatches(flow_name) AS mismatches
  FROM flowpg.flows WHERE flow_name LIKE 'alt\_%' ORDER BY 1;

SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows WHERE flow_name LIKE 'alt\_%';
DROP TABLE alt_mm, alt_out_streaming, alt_out_batching;
