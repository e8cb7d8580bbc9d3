-- Settings are pinned: a flow evaluates under the settings captured when it
-- was created, whatever the session that looks at it or writes to it uses.
-- Stable output: UTC, ISO dates.
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';

CREATE TABLE visits (at timestamptz, page text);
INSERT INTO visits
SELECT '2024-05-01 00:00:00+00'::timestamptz + i * interval '37 minutes', 'p' || i % 4
FROM generate_series(0, 199) i;

SET TimeZone = 'Asia/Kolkata';
SET DateStyle = 'SQL, DMY';
SELECT flowpg.create_flow('daily_kolkata', 'visits_daily_kolkata',
  $$SELECT date_trunc('day', at) AS day, page, count(*) AS n FROM visits GROUP BY 1, 2$$) > 0 AS created;
RESET DateStyle;

-- The day boundaries are Kolkata's (UTC+05:30) in every session.
SET TimeZone = 'UTC';
SELECT * FROM flowpg.flow_window_bounds('daily_kolkata', '2024-05-02 12:00:00+00'::timestamptz);
SET TimeZone = 'America/New_York';
SELECT * FROM flowpg.flow_window_bounds('daily_kolkata', '2024-05-02 12:00:00+00'::timestamptz);
-- ... while the session's own zone gives other days.
SELECT * FROM flowpg.window_bounds($$date_trunc('day', $1)$$, '2024-05-02 12:00:00+00'::timestamptz);

-- The backfill ran in Kolkata time: each sink day starts at 18:30 UTC.
SET TimeZone = 'UTC';
SELECT DISTINCT day FROM visits_daily_kolkata ORDER BY day;
SELECT sum(n) AS visits FROM visits_daily_kolkata;

-- The pinned settings, and the query as the flow sees it, are the same
-- from sessions in any zone.
SELECT settings FROM flowpg.flow WHERE flow_name = 'daily_kolkata';
SET TimeZone = 'Pacific/Auckland';
SELECT query FROM flowpg.flows WHERE flow_name = 'daily_kolkata';
SET TimeZone = 'UTC';
SELECT query FROM flowpg.flows WHERE flow_name = 'daily_kolkata';

-- A flow whose constants depend on the zone: its origin literal keeps the
-- instant it had at creation.
SET TimeZone = 'Asia/Tokyo';
SELECT flowpg.create_flow('bins_tokyo', 'visits_bins_tokyo',
  $$SELECT date_bin('6 hours', at, '2024-01-01 00:00') AS bin, count(*) AS n FROM visits GROUP BY 1$$) > 0 AS created;
SET TimeZone = 'UTC';
SELECT * FROM flowpg.flow_window_bounds('bins_tokyo', '2024-05-01 12:00:00+00'::timestamptz);
SELECT window_expression FROM flowpg.flows WHERE flow_name = 'bins_tokyo';
SELECT min(bin) FROM visits_bins_tokyo;
RESET TimeZone;
