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

-- The backfill ran in Kolkata time: each sink day starts at 18:30 UTC
-- (flush_flow completes it, here in a UTC session, if the worker has not).
SET TimeZone = 'UTC';
SELECT flowpg.flush_flow('daily_kolkata') >= 0 AS backfilled;
SELECT DISTINCT day FROM visits_daily_kolkata ORDER BY day;
SELECT sum(n) AS visits FROM visits_daily_kolkata;

-- The pinned settings, and the query as the flow sees it, are the same
-- from sessions in any zone.
SELECT s FROM flowpg.flow, unnest(settings) s WHERE flow_name = 'daily_kolkata'
   AND s ~ '^(TimeZone|DateStyle|IntervalStyle|extra_float_digits|search_path|default_text_search_config)=';
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
SELECT flowpg.flush_flow('bins_tokyo') >= 0 AS backfilled;	-- in a UTC session
SELECT * FROM flowpg.flow_window_bounds('bins_tokyo', '2024-05-01 12:00:00+00'::timestamptz);
SELECT window_expression FROM flowpg.flows WHERE flow_name = 'bins_tokyo';
SELECT min(bin) FROM visits_bins_tokyo;
RESET TimeZone;

-- Every setting a stable function can depend on is pinned, not only the
-- zone: to_tsvector(text) reads default_text_search_config, current_setting()
-- any custom setting.  Writers in sessions that set them otherwise change
-- nothing, in either engine.
CREATE TABLE notes (at timestamptz, body text, qty int);
SET default_text_search_config = 'pg_catalog.english';
SET app.factor = '2';
SELECT flowpg.create_flow('words_s', 'notes_words_s',
  $$SELECT date_trunc('hour', at) AS hour, length(to_tsvector(body)) AS words, count(*) AS n,
		   sum(qty * current_setting('app.factor')::int) AS weighted
	  FROM notes GROUP BY 1, 2$$) > 0 AS created;
SELECT flowpg.create_flow('words_b', 'notes_words_b',
  $$SELECT date_trunc('hour', at) AS hour, length(to_tsvector(body)) AS words, count(*) AS n,
		   sum(qty * current_setting('app.factor')::int) AS weighted
	  FROM notes GROUP BY 1, 2$$, mode => 'batching') > 0 AS created;
SELECT flow_name, mode FROM flowpg.flows WHERE flow_name LIKE 'words\__' ORDER BY 1;
SET default_text_search_config = 'pg_catalog.simple';
SET app.factor = '3';
INSERT INTO notes
SELECT '2024-05-01 00:00+00'::timestamptz + i * interval '7 minutes',
	   CASE i % 3 WHEN 0 THEN 'the cat and the hat' WHEN 1 THEN 'a dog in a fog' ELSE 'running runners run' END,
	   i % 10
FROM generate_series(1, 300) i;
SELECT flowpg.flush_flow('words_s') >= 0 AS flushed, flowpg.flush_flow('words_b') >= 0 AS flushed;
-- the oracle under the creator's settings
SET default_text_search_config = 'pg_catalog.english';
SET app.factor = '2';
SELECT flow_mismatches('words_s') AS streaming_mismatches, flow_mismatches('words_b') AS batching_mismatches;
SELECT sum(weighted) AS weighted, sum(words * n) AS words FROM notes_words_s;
RESET default_text_search_config;
RESET app.factor;
