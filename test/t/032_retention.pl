# flowpg: rollups that outlive their raw data.
#
# A year of metrics (compressed in time: a row per device and hour) in a
# source partitioned by day with pg_partman; rollups with expire_after in
# both engines (a batching flow that recomputes, one that keeps partial
# states, a streaming flow), a flow over a rollup's sink, and a flow without
# expire_after for contrast.  Each is backfilled with the whole year.  Then
# pg_partman's retention drops the raw partitions older than 30 days, rows
# below the horizon are deleted and a partition truncated, late rows come
# to frozen and to maintained windows, a partition of a partitioned sink is
# dropped.  Every window below the horizon must stay exactly as it was; the
# windows from the horizon on must equal the query over the source --
# across a restart and a dump/restore.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = FlowpgTest::node('retention', qq{
timezone = 'UTC'
flowpg.flush_interval = '50ms'
});
sub psql { return $node->safe_psql($_[1] // 'app', $_[0]); }

$node->safe_psql('postgres', 'CREATE DATABASE app');
psql($FlowpgTest::mismatches_function);
psql(q{
CREATE SCHEMA partman;
CREATE EXTENSION pg_partman SCHEMA partman;
CREATE EXTENSION flowpg;
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value float8 NOT NULL)
  PARTITION BY RANGE (ts);
CREATE INDEX ON metrics (ts);
SELECT partman.create_parent('public.metrics', 'ts', 'native', 'daily', p_premake => 3,
                             p_start_partition => (now() - interval '366 days')::date::text,
                             p_jobmon => false);
-- a year: a row per device and hour (values exact in binary floating point)
INSERT INTO metrics
  SELECT date_trunc('hour', now()) - h * interval '1 hour' + d * interval '1 minute', d, (h % 40) / 4.0
    FROM generate_series(0, 365 * 24 - 1) h, generate_series(1, 4) d;

-- the daily rollup's sink, partitioned by month, as the rollups' own retention would have it
CREATE TABLE daily_b (device int NOT NULL, day timestamptz NOT NULL, n bigint, total float8,
                      PRIMARY KEY (device, day)) PARTITION BY RANGE (day);
SELECT partman.create_parent('public.daily_b', 'day', 'native', 'monthly', p_premake => 2,
                             p_start_partition => date_trunc('month', now() - interval '366 days')::date::text,
                             p_jobmon => false);

SELECT flowpg.create_flow('hourly_s', 'hourly_s',
  $$SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n, sum(value) AS total,
           min(value) AS lo, max(value) AS hi FROM metrics GROUP BY 1, 2$$,
  mode => 'streaming', expire_after => '7 days');
SELECT flowpg.create_flow('daily_b', 'daily_b',
  $$SELECT device, date_trunc('day', ts) AS day, count(*) AS n, sum(value) AS total
      FROM metrics GROUP BY 1, 2$$,
  mode => 'batching', expire_after => '7 days');
SET flowpg.batching_partial_states = on;
SELECT flowpg.create_flow('daily_k', 'daily_k',
  $$SELECT device, date_trunc('day', ts) AS day, count(*) AS n, max(value) AS hi
      FROM metrics GROUP BY 1, 2$$,
  mode => 'batching', expire_after => '7 days');
RESET flowpg.batching_partial_states;
-- a rollup of a rollup: its source (the hourly sink) keeps its history
SELECT flowpg.create_flow('weekly', 'weekly',
  $$SELECT device, date_trunc('week', hour) AS week, sum(n) AS n, sum(total) AS total
      FROM hourly_s GROUP BY 1, 2$$);
-- without expire_after, retention takes the history away (the contrast)
SELECT flowpg.create_flow('daily_all', 'daily_all',
  $$SELECT device, date_trunc('day', ts) AS day, count(*) AS n FROM metrics GROUP BY 1, 2$$,
  mode => 'batching');
});
my @expiring = qw(hourly_s daily_b daily_k);
my @all = (@expiring, qw(weekly daily_all));
my %window = (hourly_s => 'hour', daily_b => 'day', daily_k => 'day');

psql("SELECT flowpg.flush_flow('$_')") for qw(hourly_s daily_b daily_k);
psql("SELECT flowpg.flush_flow('$_')") for qw(weekly daily_all);
for my $f (@all)
{
	is(psql("SELECT flow_mismatches('$f')"), '0', "$f: the whole year is backfilled and exact");
}
is(psql(q{SELECT count(*) FROM hourly_s}), 365 * 24 * 4, 'hourly_s holds every hour of the year');
is(psql(q{SELECT count(*) = 4 * count(DISTINCT day) AND min(day) < now() - interval '364 days' FROM daily_b}),
	't', 'daily_b holds every day of the year');
is(psql(q{SELECT string_agg(flow_name || ' ' || (horizon = date_trunc(CASE flow_name WHEN 'hourly_s' THEN 'hour' ELSE 'day' END,
                                                      now() - interval '7 days')), ', ' ORDER BY flow_name)
            FROM flowpg.flows WHERE expire_after IS NOT NULL}),
	'daily_b true, daily_k true, hourly_s true', 'flows.horizon is the start of the oldest maintained window');
cmp_ok(psql(q{SELECT state_groups FROM flowpg.flow_stats WHERE flow_name = 'hourly_s'}), '<=', 4 * 8,
	'the streaming state holds the recent windows only, not the year');

# The frozen windows: copies, and a function comparing a sink's rows below
# its horizon (as of the comparison) with them.  update_at is flowpg's own.
for my $f (@expiring)
{
	my $cols = psql(qq{SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
	                    WHERE attrelid = '$f'::regclass AND attnum > 0 AND NOT attisdropped
	                      AND attname <> 'update_at'});
	psql("CREATE TABLE frozen_$f AS SELECT $cols FROM $f");
}
psql(q{
CREATE FUNCTION frozen_changed(flow text, col text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE cols text; n bigint; h timestamptz;
BEGIN
	SELECT horizon INTO STRICT h FROM flowpg.flows WHERE flow_name = flow;
	SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols FROM pg_attribute
	 WHERE attrelid = ('frozen_' || flow)::regclass AND attnum > 0 AND NOT attisdropped;
	EXECUTE format('SELECT count(*) FROM ((SELECT %1$s FROM %2$I WHERE %4$I < $1
	                                        EXCEPT ALL SELECT %1$s FROM %3$I WHERE %4$I < $1)
	                                      UNION ALL (SELECT %1$s FROM %3$I WHERE %4$I < $1
	                                        EXCEPT ALL SELECT %1$s FROM %2$I WHERE %4$I < $1)) d',
	               cols, 'frozen_' || flow, flow, col) INTO n USING h;
	RETURN n;
END $$;
});

sub check_all
{
	my ($when, $db) = @_;
	$db //= 'app';
	psql("SELECT flowpg.flush_flow('$_')", $db) for @all;
	for my $f (@expiring)
	{
		is(psql("SELECT frozen_changed('$f', '$window{$f}')", $db), '0',
			"$when: $f keeps every window below its horizon as it was");
		is(psql("SET client_min_messages = warning; SELECT flowpg.verify_flow('$f')", $db), '0',
			"$when: $f is exact from its horizon on");
	}
	is(psql(q{SELECT flow_mismatches('weekly')}, $db), '0',
		"$when: the rollup of the hourly rollup equals its query over that sink");
	is(psql(q{SELECT flow_mismatches('daily_all')}, $db), '0',
		"$when: the flow without expire_after equals its query over what the source still has");
}

# Retention: pg_partman drops the raw partitions older than 30 days.
psql(q{UPDATE partman.part_config SET retention = '30 days', retention_keep_table = false
        WHERE parent_table = 'public.metrics';
       SELECT partman.run_maintenance('public.metrics', p_jobmon => false)});
cmp_ok(psql(q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'metrics'::regclass}), '<', 40,
	'pg_partman dropped the raw partitions older than 30 days');
is(psql(q{SELECT count(*) FROM metrics WHERE ts < now() - interval '32 days'}), '0', 'the old raw rows are gone');

# More below the horizon: a DELETE, a TRUNCATE of a partition; late rows to
# frozen and to maintained windows; new rows.
psql(q{
DELETE FROM metrics WHERE ts BETWEEN now() - interval '20 days' AND now() - interval '10 days';
});
my $part = psql(q{SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                   WHERE i.inhparent = 'metrics'::regclass
                     AND pg_get_expr(c.relpartbound, c.oid)
                         LIKE 'FOR VALUES FROM (''' || to_char(now() - interval '25 days', 'YYYY-MM-DD') || '%'});
ok($part ne '', "the partition of 25 days ago is $part");
psql("TRUNCATE $part");
psql(q{
INSERT INTO metrics VALUES (now() - interval '12 days', 1, 99), (now() - interval '3 days', 2, 7.5),
                           (now() - interval '3 days', 9, 1), (now(), 3, 0.25);
});
check_all('after retention, deletes and late rows');
is(psql(q{SELECT count(*) FROM daily_all WHERE day < now() - interval '40 days'}), '0',
	'the flow without expire_after lost the days whose raw rows were dropped');
cmp_ok(psql(q{SELECT count(*) FROM daily_b WHERE day < now() - interval '300 days'}), '>', 0,
	'the rollup with expire_after kept them');

# A partition of the partitioned sink dropped: noticed, its windows gone.
my $sink_part = psql(q{SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                        WHERE i.inhparent = 'daily_b'::regclass
                          AND pg_get_expr(c.relpartbound, c.oid)
                              LIKE 'FOR VALUES FROM (''' || to_char(date_trunc('month', now() - interval '200 days'), 'YYYY-MM-DD') || '%'});
my ($rc, $out, $err) = $node->psql('app', "DROP TABLE $sink_part");
is($rc, 0, "DROP TABLE $sink_part of daily_b's sink");
like($err, qr/WARNING:  DROP of partition $sink_part takes its rows out of the sink of flow "daily_b"/,
	'the session is warned that the sink lost rows');
like(psql(q{SELECT message FROM flowpg.flow_errors WHERE flow_name = 'daily_b' ORDER BY at DESC LIMIT 1}),
	qr/DROP of partition \Q$sink_part\E takes its rows out of the sink/, 'flow_errors keeps it');
is(psql(q{SELECT state FROM flowpg.flows WHERE flow_name = 'daily_b'}), 'active', 'the flow stays active');
psql(qq{DELETE FROM frozen_daily_b WHERE day >= date_trunc('month', now() - interval '200 days')
                                    AND day < date_trunc('month', now() - interval '200 days') + interval '1 month'});
check_all('after a sink partition was dropped');

# A restart: the state is reloaded (its recent windows), nothing recomputes below the horizon.
$node->restart;
psql(q{INSERT INTO metrics VALUES (now() - interval '15 days', 4, 5), (now() - interval '2 days', 4, 5), (now(), 4, 5)});
check_all('after a restart');
cmp_ok(psql(q{SELECT state_groups FROM flowpg.flow_stats WHERE flow_name = 'hourly_s'}), '<=', 4 * 8 + 2,
	'the reloaded state holds the recent windows only');

# Dump and restore: the frozen windows travel with the sinks.
my $dump = $node->basedir . '/app.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', 'app' ], 'pg_dump -Fc app');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', 'restored', $dump ], 'pg_restore');
psql(q{INSERT INTO metrics VALUES (now() - interval '16 days', 1, 5), (now() - interval '1 day', 1, 5)}, 'restored');
check_all('in the restored database', 'restored');

$node->stop;
done_testing();
