-- DDL on what a flow uses: renames are followed; dropping or retyping what
-- it reads is refused as for a view (CASCADE drops the flow too); dropping
-- its sink drops it; its capture triggers cannot be dropped or disabled.
-- Stable output: UTC, ISO dates.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';

CREATE SCHEMA shop;
CREATE TABLE shop.orders (placed timestamptz, customer int, amount numeric, note text);
INSERT INTO shop.orders
SELECT '2024-06-01 00:00+00'::timestamptz + i * interval '11 minutes', i % 7, i * 1.5, 'n'
FROM generate_series(0, 299) i;
SELECT flowpg.create_flow('hourly_sales', 'shop.hourly_sales',
  $$SELECT customer, date_trunc('hour', placed) AS hour, sum(amount) AS revenue
	  FROM shop.orders GROUP BY 1, 2$$) > 0 AS created;
SELECT flowpg.flush_flow('hourly_sales') >= 0 AS backfilled;

-- Renaming the source, its columns, the sink and the schema keeps the flow,
-- and its definition shows the new names.
ALTER TABLE shop.orders RENAME TO purchases;
ALTER TABLE shop.purchases RENAME COLUMN placed TO placed_at;
ALTER TABLE shop.purchases RENAME COLUMN customer TO customer_id;
ALTER TABLE shop.hourly_sales RENAME TO sales_per_hour;
ALTER SCHEMA shop RENAME TO store;
SELECT source_tables, sink_table, time_column, flow_definition
  FROM flowpg.flows WHERE flow_name = 'hourly_sales';
-- The canonical text kept in the catalog (what pg_dump saves) follows too.
SELECT query FROM flowpg.flow WHERE flow_name = 'hourly_sales';
SELECT flow_mismatches('hourly_sales') AS mismatches;

-- Columns the flow does not use can change freely.
ALTER TABLE store.purchases DROP COLUMN note;
ALTER TABLE store.purchases ADD COLUMN channel text;
ALTER TABLE store.sales_per_hour ADD COLUMN remark text;

-- Columns it reads or writes cannot be dropped or retyped, nor can its
-- capture triggers be dropped or disabled.
ALTER TABLE store.purchases DROP COLUMN amount;
ALTER TABLE store.purchases ALTER COLUMN customer_id TYPE bigint;
ALTER TABLE store.sales_per_hour DROP COLUMN revenue;
ALTER TABLE store.sales_per_hour ALTER COLUMN revenue TYPE interval USING make_interval(secs => revenue::float8);	-- no cast from numeric
ALTER TABLE store.sales_per_hour RENAME COLUMN revenue TO income;
DROP TRIGGER flowpg_capture_insert ON store.purchases;
ALTER TABLE store.purchases DISABLE TRIGGER ALL;
ALTER TABLE store.purchases DISABLE TRIGGER flowpg_capture_update;
-- nor fired for other sessions than flowpg set them up for (that would lose
-- changes, or count them twice)
ALTER TABLE store.purchases ENABLE REPLICA TRIGGER flowpg_capture_insert;
ALTER TABLE store.purchases ENABLE ALWAYS TRIGGER flowpg_capture_delete;
ALTER TABLE store.purchases ENABLE TRIGGER flowpg_capture_row;
SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'store.purchases'::regclass ORDER BY tgname;
SELECT attname FROM pg_attribute WHERE attrelid = 'store.purchases'::regclass
   AND attnum > 0 AND NOT attisdropped ORDER BY attnum;

-- The sink's unique index on the group key cannot be dropped (in any way)
-- while it is the only one the flow can write the sink by.
SELECT indexname FROM pg_indexes WHERE schemaname = 'store' AND tablename = 'sales_per_hour';
DROP INDEX store.hourly_sales_hour_customer_idx;
DROP INDEX CONCURRENTLY store.hourly_sales_hour_customer_idx;
ALTER TABLE store.sales_per_hour ADD CONSTRAINT sales_key UNIQUE NULLS NOT DISTINCT (hour, customer);
DROP INDEX store.hourly_sales_hour_customer_idx;
ALTER TABLE store.sales_per_hour DROP CONSTRAINT sales_key;
SELECT indexname, indexdef LIKE '%UNIQUE%' AS is_unique FROM pg_indexes
 WHERE schemaname = 'store' AND tablename = 'sales_per_hour';
-- A sink write that fails says which flow and what the sink needs.
CREATE FUNCTION store.refuse_writes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE unique_violation USING MESSAGE = 'simulated duplicate'; END $$;
CREATE TRIGGER refuse BEFORE INSERT ON store.sales_per_hour
	FOR EACH ROW EXECUTE FUNCTION store.refuse_writes();
SELECT flowpg.refresh_flow('hourly_sales');
DROP TRIGGER refuse ON store.sales_per_hour;
SELECT flowpg.refresh_flow('hourly_sales') > 0 AS refreshed;

-- A truncated sink is recomputed; its TRUNCATE trigger stays.
TRUNCATE store.sales_per_hour;
SELECT flowpg.flush_flow('hourly_sales') >= 0 AS flushed;
SELECT (SELECT count(*) FROM store.sales_per_hour) =
	   (SELECT count(*) FROM (SELECT DISTINCT customer_id, date_trunc('hour', placed_at) FROM store.purchases) g)
	   AS refilled;
DROP TRIGGER flowpg_sink_truncate ON store.sales_per_hour;
ALTER TABLE store.sales_per_hour DISABLE TRIGGER flowpg_sink_truncate;

-- Dropping the sink is refused, as for a table a view reads (the flow's
-- view depends on its sink); with CASCADE it drops the flow (with a notice).
SELECT flowpg.create_flow('daily_sales', 'store.daily_sales',
  $$SELECT date_trunc('day', placed_at) AS day, count(*) AS n FROM store.purchases GROUP BY 1$$) > 0 AS created;
SET client_min_messages = notice;
DROP TABLE store.daily_sales;
SELECT count(*) FROM flowpg.flows WHERE flow_name = 'daily_sales';
DROP TABLE store.daily_sales CASCADE;
SELECT count(*) FROM flowpg.flows WHERE flow_name = 'daily_sales';

-- A function a flow uses cannot be dropped.
CREATE FUNCTION store.day_of(t timestamptz) RETURNS timestamptz
	LANGUAGE sql IMMUTABLE RETURN date_trunc('day', t);
SELECT flowpg.create_flow('daily_sales', 'store.daily_sales',
  $$SELECT store.day_of(placed_at) AS day, count(*) AS n FROM store.purchases GROUP BY 1$$) > 0 AS created;
DROP FUNCTION store.day_of(timestamptz);

-- Dropping the source is refused; with CASCADE it drops every flow that
-- reads it, and their sinks stay.
DROP TABLE store.purchases;
DROP TABLE store.purchases CASCADE;
RESET client_min_messages;
SELECT count(*) FROM flowpg.flows WHERE flow_name IN ('daily_sales', 'hourly_sales');
SELECT to_regclass('store.sales_per_hour') IS NOT NULL AS sink_kept;

-- A flow can be created again on a new table of the same name.
CREATE TABLE store.purchases (placed_at timestamptz, amount numeric);
SELECT flowpg.create_flow('daily_sales', 'store.daily_sales2',
  $$SELECT date_trunc('day', placed_at) AS day, count(*) AS n FROM store.purchases GROUP BY 1$$) > 0 AS created;
SET client_min_messages = warning;
DROP SCHEMA store CASCADE;
RESET client_min_messages;
SELECT count(*) FROM flowpg.flows WHERE flow_name = 'daily_sales';
