-- PromQL's range functions as aggregates (issue 40, item 2, the first
-- part: TQL flows use them).  Each figure below is computed by hand from
-- Prometheus's definitions (promql/functions.go, extrapolatedRate and
-- instantValue), for a range of 60 s ending at T = 00:01:00.
SET TimeZone = 'UTC';
CREATE TEMP TABLE samples (series text, ts timestamptz, v float8);
INSERT INTO samples VALUES
  -- a: 0, 10, 20, 30 at 30, 40, 50, 60 s.  to_start 30 s >= 1.1 x the
  -- average interval (10 s): half of it, 5 s; a counter from 0 reaches zero
  -- there: 0 s.  to_end 0.  increase = 30 x (30 + 0 + 0) / 30 = 30,
  -- rate = 30 / 60 = 0.5; delta (no zero point) = 30 x 35 / 30 = 35.
  ('a', '2024-01-01 00:00:30+00', 0), ('a', '2024-01-01 00:00:40+00', 10),
  ('a', '2024-01-01 00:00:50+00', 20), ('a', '2024-01-01 00:01:00+00', 30),
  -- b: 5, 10, 2, 4 (a reset after 10).  4 - 5 + 10 = 9; to_start 5 s (the
  -- zero point, 30 x 5 / 9 = 16.7 s, is further); increase = 9 x 35 / 30
  -- = 10.5, rate = 0.175; delta = (4 - 5) x 35 / 30 = -1.1667.
  ('b', '2024-01-01 00:00:30+00', 5), ('b', '2024-01-01 00:00:40+00', 10),
  ('b', '2024-01-01 00:00:50+00', 2), ('b', '2024-01-01 00:01:00+00', 4),
  -- c: one sample: no result.
  ('c', '2024-01-01 00:00:45+00', 7),
  -- d: 0 at 10 s, 100 at 50 s (a gap).  average 40 s, threshold 44 s: both
  -- edges (10 s) extrapolated; the counter's zero point is its first
  -- sample: to_start 0.  increase = 100 x (40 + 0 + 10) / 40 = 125;
  -- delta = 100 x 60 / 40 = 150.
  ('d', '2024-01-01 00:00:10+00', 0), ('d', '2024-01-01 00:00:50+00', 100),
  -- e: 100 at 0.5 s, 101 at 1 s, then nothing: to_end 59 s > 0.55 s: by
  -- 0.25 s; to_start 0.5 s < 0.55 s: to the edge, but the zero point
  -- (0.5 x 100 / 1 = 50 s) is further.  increase = 1 x (0.5 + 0.5 + 0.25)
  -- / 0.5 = 2.5.
  ('e', '2024-01-01 00:00:00.5+00', 100), ('e', '2024-01-01 00:00:01+00', 101);

SELECT series,
       flowpg.prom_increase(ts, v, '2024-01-01 00:00:00+00', '2024-01-01 00:01:00+00') AS increase,
       flowpg.prom_rate(ts, v, '2024-01-01 00:00:00+00', '2024-01-01 00:01:00+00') AS rate,
       round(flowpg.prom_delta(ts, v, '2024-01-01 00:00:00+00', '2024-01-01 00:01:00+00')::numeric, 4) AS delta
  FROM samples GROUP BY series ORDER BY series;

-- irate / idelta: the last two samples.  a: (30 - 20) / 10 = 1, delta 10;
-- b: 2 -> 4: 0.2, 2; d: 100 / 40 = 2.5; e: 1 / 0.5 = 2.
-- f: 10 then 3 (a reset): irate 3 / 10 = 0.3, idelta -7.
INSERT INTO samples VALUES ('f', '2024-01-01 00:00:50+00', 10), ('f', '2024-01-01 00:01:00+00', 3);
SELECT series, flowpg.prom_irate(ts, v) AS irate, flowpg.prom_idelta(ts, v) AS idelta
  FROM samples GROUP BY series ORDER BY series;

-- the order rows come in does not matter
SELECT flowpg.prom_increase(ts, v, '2024-01-01 00:00:00+00', '2024-01-01 00:01:00+00') AS increase
  FROM (SELECT * FROM samples WHERE series = 'b' ORDER BY v DESC) s;
-- partial states combine (parallel aggregation forced)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
CREATE TABLE many AS
  SELECT 's' || (i % 4) AS series, timestamptz '2024-01-01 00:00:00+00' + i * interval '1 second' AS ts,
         (i / 4)::float8 AS v
    FROM generate_series(1, 20000) i;
ANALYZE many;
SELECT series, round(flowpg.prom_rate(ts, v, '2024-01-01 00:00:00+00', '2024-01-01 05:33:20+00')::numeric, 6) AS rate
  FROM many GROUP BY series ORDER BY series;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
DROP TABLE many;

-- in a recording rule: rate(x[5m]) at each tick (one transaction: the
-- flush's tick is the minute of its now(), as the rows' times are)
CREATE TABLE http_requests_total (host text, requests float8, ts timestamptz NOT NULL);
BEGIN;
INSERT INTO http_requests_total
SELECT h, i * (CASE h WHEN 'a' THEN 2 ELSE 3 END), date_trunc('minute', now()) - i * interval '15 seconds'
  FROM generate_series(0, 30) i, unnest(ARRAY['a', 'b']) h;
SELECT flowpg.create_flow('rate_5m', 'rate_5m_sink', $$
  SELECT date_trunc('minute', now()) AS at, host,
         flowpg.prom_rate(ts, requests, date_trunc('minute', now()) - interval '5 minutes',
                          date_trunc('minute', now())) AS rate
    FROM http_requests_total
   WHERE ts > date_trunc('minute', now()) - interval '5 minutes'
     AND ts <= date_trunc('minute', now())
   GROUP BY 1, 2$$, eval_interval => '1 minute') > 0 AS created;
SELECT flowpg.flush_flow('rate_5m') >= 0 AS flushed;
-- read forwards, a's counter falls by 2 every 15 s: in (T - 300 s, T] its
-- 20 samples go 38, 36, .., 0, each step a reset: 0 - 38 + (38 + 36 + ..
-- + 2) = 342.  The first sample is 15 s after the range's start, within
-- 1.1 x 15 s: extrapolated to it (the zero point, 285 x 38 / 342 = 31.7 s
-- back, is further); the last is at T.  increase = 342 x 300 / 285 = 360,
-- rate = 1.2.  b (steps of 3): 513 x 300 / 285 / 300 = 1.8.
SELECT s.host, round(s.rate::numeric, 6) AS rate, s.rate = q.rate AS same_as_query
  FROM rate_5m_sink s
  JOIN (SELECT host, flowpg.prom_rate(ts, requests, date_trunc('minute', now()) - interval '5 minutes',
                                      date_trunc('minute', now())) AS rate
          FROM http_requests_total
         WHERE ts > date_trunc('minute', now()) - interval '5 minutes' AND ts <= date_trunc('minute', now())
         GROUP BY host) q USING (host)
 ORDER BY 1;
COMMIT;
SELECT flowpg.verify_flow('rate_5m') AS mismatches;
SELECT flowpg.drop_flow('rate_5m');
DROP TABLE http_requests_total, rate_5m_sink;

-- refused: a range that differs between rows of a group, or ends before it starts
\set VERBOSITY terse
SELECT flowpg.prom_rate(ts, v, ts - interval '1 minute', ts) FROM samples WHERE series = 'a';
SELECT flowpg.prom_rate(ts, v, '2024-01-01 00:01:00+00', '2024-01-01 00:00:00+00') FROM samples;
\set VERBOSITY default
