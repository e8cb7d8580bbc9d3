# flowpg: GreptimeDB's flow statements across a restart and a dump/restore.
#
#   - an EVAL INTERVAL flow using now() runs on ticks anchored at the epoch;
#     after the server was down for several ticks it catches up at most the
#     newest three (GreptimeDB's bounded catch-up), then goes on ticking;
#   - a pending flow (defer_on_missing_source) survives the restart and
#     starts when its table is created;
#   - pg_dump / pg_restore keeps flows created through flowpg.execute (SHOW
#     CREATE FLOW the same) and pending flows, which start in the restored
#     database when their table appears there; restored sinks equal their
#     queries.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my $node = FlowpgTest::node('greptime');

sub poll_until { return FlowpgTest::poll_until($node, @_); }

$node->safe_psql('postgres', 'CREATE DATABASE flowdb');
$node->safe_psql('flowdb', 'CREATE EXTENSION flowpg');
$node->safe_psql('flowdb', $FlowpgTest::mismatches_function);
$node->safe_psql(
	'flowdb', q{
CREATE TABLE requests (path text, latency_ms int, ts timestamptz NOT NULL);
INSERT INTO requests
  SELECT '/p' || (i % 3), i, timestamptz '2024-01-01 00:00:00+00' + i * interval '1 second'
  FROM generate_series(1, 500) i;
SELECT * FROM flowpg.execute($$
CREATE FLOW tick_time SINK TO tick_time_out EVAL INTERVAL '2 s'
AS SELECT date_trunc('second', now()) AS ts, count(latency_ms) AS value_count
FROM requests GROUP BY date_trunc('second', now())$$);
SELECT * FROM flowpg.execute($$
CREATE FLOW per_path SINK TO per_path_out COMMENT 'per path and minute'
AS SELECT path, count(*), max(latency_ms), date_bin(INTERVAL '1 minute', ts) AS time_window,
FROM requests GROUP BY path, time_window$$);
SELECT * FROM flowpg.execute($$
CREATE FLOW later SINK TO later_out WITH (defer_on_missing_source = true)
AS SELECT k, count(*) AS n FROM later_table GROUP BY k$$);
});

my $runs_sql = q{SELECT runs FROM flowpg.flow_stats WHERE flow_name = 'tick_time'};
ok(poll_until('flowdb', "SELECT ($runs_sql) >= 2", 't', 30), 'the tick flow runs on its own');
is($node->safe_psql('flowdb',
		q{SELECT DISTINCT date_part('epoch', ts)::numeric % 2, value_count FROM tick_time_out}),
	'0|500', 'now() in the sink is a tick: a multiple of 2 seconds since the epoch');
is($node->safe_psql('flowdb',
		q{SELECT date_part('epoch', next_run_at)::numeric % 2 FROM flowpg.flow_stats WHERE flow_name = 'tick_time'}),
	'0', 'the next run is at a tick');

###############################################################################
# Down for about five ticks: at most the newest three are caught up.
###############################################################################
# (a recording rule: each run adds the row of its tick, and the rows stay)
my ($last_ts, $runs_at_stop) = split /\|/, $node->safe_psql('flowdb',
	qq{SELECT (SELECT max(ts) FROM tick_time_out), ($runs_sql)});
$node->stop;
my $stopped = time();
sleep(10);
$node->start;
my $started = time();
my $runs_before = $node->safe_psql('flowdb', $runs_sql);
ok(poll_until('flowdb', "SELECT ($runs_sql) >= $runs_before + 3", 't', 30),
	'missed ticks are caught up after the restart');
my $elapsed = time() - $started;
my $runs_after = $node->safe_psql('flowdb', $runs_sql);
# three catch-up runs, plus one per tick that passed since the start
cmp_ok($runs_after - $runs_before, '<=', 3 + int($elapsed / 2) + 1,
	'no more than the newest three missed ticks ran');
ok(poll_until('flowdb',
		q{SELECT max(ts) >= now() - interval '6 seconds' FROM tick_time_out}, 't', 30),
	'the tick flow is current again');
# in one snapshot: every run since the stop, the caught-up ones included,
# added the row of its own tick
is($node->safe_psql('flowdb',
		qq{SELECT (SELECT count(*) FROM tick_time_out WHERE ts > '$last_ts') =
				  ($runs_sql) - $runs_at_stop}),
	't', 'each run of the recording rule added its own tick\'s row');
cmp_ok($node->safe_psql('flowdb',
		qq{SELECT count(*) FROM tick_time_out
		   WHERE ts > to_timestamp($stopped) AND ts <= to_timestamp($started)}),
	'<=', 3, 'at most three ticks missed while stopped have rows');

is($node->safe_psql('flowdb',
		q{SELECT state FROM flowpg.information_schema_flows WHERE flow_name = 'later'}),
	'pending', 'the pending flow is still pending after the restart');

###############################################################################
# Dump and restore: the restored database has the same flows, the pending
# one included.
###############################################################################
$node->safe_psql('flowdb', q{INSERT INTO requests VALUES ('/p9', 1, '2024-01-01 00:00:00+00')});
my $definition_sql = q{SELECT result FROM flowpg.execute('SHOW CREATE FLOW per_path')};
my $definition = $node->safe_psql('flowdb', $definition_sql);
like($definition, qr/^CREATE FLOW IF NOT EXISTS per_path\nSINK TO public.per_path_out\nCOMMENT 'per path and minute'\nAS SELECT path, count\(\*\)/,
	'SHOW CREATE FLOW shows the statement in GreptimeDB\'s layout');

my $dump = $node->basedir . '/flowdb.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('flowdb') ], 'pg_dump');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('restored'), $dump ], 'pg_restore');

is($node->safe_psql('restored', $definition_sql), $definition,
	'the restored flow has the same definition');
# (restored flows are "restoring" until the worker sees their tables complete)
ok(poll_until('restored',
		q{SELECT string_agg(flow_name || ':' || state, ',' ORDER BY flow_name) FROM flowpg.information_schema_flows},
		'later:pending,per_path:active,tick_time:active', 30),
	'the restored database has the flows, the pending one too');
# (the dump may have caught the sink before the worker wrote /p9: the
# restored flow's first run recomputes it from the restored source)
ok(poll_until('restored', q{SELECT "count(*)" FROM per_path_out WHERE path = '/p9'}, '1', 30),
	'the restored sink has the rows');

$node->safe_psql('restored', q{INSERT INTO requests VALUES ('/p9', 2, '2024-01-01 00:00:10+00')});
is($node->safe_psql('restored',
		q{SELECT affected_rows >= 0 FROM flowpg.execute($$ADMIN FLUSH_FLOW('per_path')$$);
		  SELECT flow_mismatches('per_path')}),
	"t\n0", 'the restored flow captures new rows and its sink equals its query');

# the table appears in the restored database: the worker starts the pending
# flow there, by itself, within seconds
$node->safe_psql('restored', q{CREATE TABLE later_table AS SELECT i % 4 AS k FROM generate_series(1, 40) i});
ok(poll_until('restored',
		q{SELECT state FROM flowpg.information_schema_flows WHERE flow_name = 'later'},
		'active', 10),
	'the pending flow starts in the restored database');
$node->safe_psql('restored', q{INSERT INTO later_table VALUES (7)});
is($node->safe_psql('restored',
		q{SELECT affected_rows >= 0 FROM flowpg.execute($$ADMIN FLUSH_FLOW('later')$$);
		  SELECT flow_mismatches('later'), (SELECT n FROM later_out WHERE k = 7)}),
	"t\n0|1", 'the started flow is exact');

# and in the original database, after its restart
$node->safe_psql('flowdb', q{CREATE TABLE later_table (k int); INSERT INTO later_table VALUES (1), (1)});
is($node->safe_psql('flowdb',
		q{SELECT affected_rows >= 0 FROM flowpg.execute($$ADMIN FLUSH_FLOW('later')$$);
		  SELECT flow_mismatches('later')}),
	"t\n0", 'the pending flow starts after a restart too');

$node->stop;
done_testing();
