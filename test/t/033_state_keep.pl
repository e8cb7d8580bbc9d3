# flowpg: streaming state that stays small on its own.
#
# 10,000 devices, a year of history (a row per device and month), then
# ten minutes of live rows (a row per device and minute), under the
# default flowpg.state_memory: per-minute rollups keep the state of the
# windows that still change (flowpg.state_keep, 5 minutes), not the year;
# nothing is given up for memory; late rows to windows that left the state
# are recomputed from the source, exact; flow_stats shows where the state
# begins.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = FlowpgTest::node('state_keep', qq{
timezone = 'UTC'
});
sub psql { return $node->safe_psql('app', $_[0]); }

$node->safe_psql('postgres', 'CREATE DATABASE app');
psql($FlowpgTest::mismatches_function);
psql(q{
CREATE EXTENSION flowpg;
CREATE TABLE m (ts timestamptz NOT NULL, device int NOT NULL, v float8 NOT NULL);
CREATE INDEX ON m (ts);
-- a year: a row per device and month, at a minute of its own
INSERT INTO m
  SELECT date_trunc('minute', now()) - interval '20 minutes' - w * interval '30 days' - (d % 997) * interval '1 minute',
         d, (d % 8) / 4.0
    FROM generate_series(1, 12) w, generate_series(1, 10000) d;
SELECT flowpg.create_flow('per_minute', 'per_minute',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(v) AS total, max(v) AS hi
      FROM m GROUP BY 1, 2$$);
SELECT flowpg.create_flow('per_minute_avg', 'per_minute_avg',
  $$SELECT date_trunc('minute', ts) AS minute, device, avg(v) AS mean FROM m GROUP BY 1, 2$$);
SELECT flowpg.create_flow('per_hour', 'per_hour',
  $$SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n, sum(v) AS total FROM m GROUP BY 1, 2$$);
});
my @flows = qw(per_minute per_minute_avg per_hour);
psql("SELECT flowpg.flush_flow('$_')") for @flows;
for my $f (@flows)
{
	is(psql("SELECT flow_mismatches('$f')"), '0', "$f: the year is backfilled, exact");
}
is(psql(q{SELECT string_agg(mode, ',' ORDER BY flow_name) FROM flowpg.flows}), 'streaming,streaming,streaming',
	'the three flows stream');

# Ten minutes of live rows, a minute at a time.
for my $i (1 .. 10)
{
	psql(qq{INSERT INTO m SELECT date_trunc('minute', now()) - interval '11 minutes' + $i * interval '1 minute'
	                             + (d % 60) * interval '1 second', d, (d % 4) / 4.0
	          FROM generate_series(1, 10000) d});
	psql("SELECT flowpg.flush_flow('$_')") for @flows;
}
for my $f (@flows)
{
	is(psql("SELECT flow_mismatches('$f')"), '0', "$f: exact after the live minutes");
}
my $memory = psql(q{SELECT state_bytes || ' of ' || state_limit || ' bytes, '
                           || degraded_flows || ' degraded, ' || evictions || ' evictions'
                      FROM flowpg.memory WHERE scope = 'database'});
diag("state of 3 per-minute/hour flows of 10,000 devices: $memory");
is(psql(q{SELECT degraded_flows = 0 AND evictions = 0 AND degrades = 0 AND state_bytes < state_limit / 2
            FROM flowpg.memory WHERE scope = 'database'}), 't',
	"the default state memory holds the flows of 10,000 devices with room to spare ($memory)");
cmp_ok(psql(q{SELECT state_groups FROM flowpg.flow_stats WHERE flow_name = 'per_minute'}), '<=', 10000 * 7,
	'a per-minute flow keeps the windows of the last minutes only');
is(psql(q{SELECT state_from = date_trunc('minute', (SELECT max(ts) FROM m) - interval '5 minutes')
            FROM flowpg.flow_stats WHERE flow_name = 'per_minute'}), 't',
	'flow_stats.state_from: the window of the newest row minus state_keep');
is(psql(q{SELECT string_agg(state, ',') FROM flowpg.flow_stats}), 'active,active,active',
	'the flows are active, not degraded');

# Late rows to windows that left the state: an hour ago, a month ago.
my $fallbacks = psql(q{SELECT fallbacks FROM flowpg.flow_stats WHERE flow_name = 'per_minute'});
psql(q{INSERT INTO m VALUES (now() - interval '1 hour', 42, 0.5), (now() - interval '30 days', 42, 1.5),
                            (now() - interval '30 days', 99999, 2)});
psql(q{DELETE FROM m WHERE device = 7 AND ts < now() - interval '300 days'});
psql("SELECT flowpg.flush_flow('$_')") for @flows;
for my $f (@flows)
{
	is(psql("SELECT flow_mismatches('$f')"), '0', "$f: late rows and deletes in cold windows are exact");
}
cmp_ok(psql(q{SELECT fallbacks FROM flowpg.flow_stats WHERE flow_name = 'per_minute'}), '>', $fallbacks,
	'they went to the recompute');
cmp_ok(psql(q{SELECT state_groups FROM flowpg.flow_stats WHERE flow_name = 'per_minute'}), '<=', 10000 * 7,
	'and not into the state');

# A window recomputed for a late row is kept warm: the next late rows to it
# are applied to the state, not recomputed again.
psql(q{INSERT INTO m VALUES (date_trunc('minute', now()) - interval '2 hours' + interval '10 seconds', 5, 0.25)});
psql("SELECT flowpg.flush_flow('per_minute')") for 1 .. 2;
my $warm_fallbacks = psql(q{SELECT fallbacks FROM flowpg.flow_stats WHERE flow_name = 'per_minute'});
psql(q{INSERT INTO m VALUES (date_trunc('minute', now()) - interval '2 hours' + interval '20 seconds', 6, 0.5),
                            (date_trunc('minute', now()) - interval '2 hours' + interval '30 seconds', 5, 0.75)});
psql("SELECT flowpg.flush_flow('per_minute')") for 1 .. 2;
is(psql(q{SELECT fallbacks FROM flowpg.flow_stats WHERE flow_name = 'per_minute'}), $warm_fallbacks,
	'late rows to a warm window are applied, not recomputed');
is(psql("SELECT flow_mismatches('per_minute')"), '0', 'and exact');

# An idle worker says so in pg_stat_activity, not what it ran last.
ok(FlowpgTest::poll_until($node, 'app', q{
SELECT count(*) > 0 AND bool_and(query = 'flowpg: idle') FROM pg_stat_activity
 WHERE backend_type = 'flowpg worker' AND state = 'idle'}, 't', 30), 'idle workers show "flowpg: idle"');

# A backfill that fails in flush_flow: the error reaches flow_errors (the
# session's transaction cannot keep it; the worker, woken, runs it and can).
psql(q{CREATE TABLE bad (ts timestamptz NOT NULL, v int NOT NULL);
       INSERT INTO bad VALUES (now(), 0)});
my ($rc, $out, $err) = $node->psql('app', q{
SET flowpg.batching_partial_states = off;
SELECT flowpg.create_flow('bad_flow', 'bad_out',
  $$SELECT date_trunc('hour', ts) AS hour, sum(10 / v) AS s FROM bad GROUP BY 1$$, mode => 'batching');
SELECT flowpg.flush_flow('bad_flow');});
like($err, qr/division by zero/, "the flush's backfill fails");
ok(FlowpgTest::poll_until($node, 'app', q{SELECT count(*) > 0 FROM flowpg.flow_errors
                                          WHERE flow_name = 'bad_flow' AND message = 'division by zero'}, 't', 30),
	'and its error is in flow_errors');
psql(q{SELECT flowpg.drop_flow('bad_flow')});

# A restart reloads only the recent windows.
$node->restart;
psql(q{INSERT INTO m VALUES (now(), 1, 1)});
psql("SELECT flowpg.flush_flow('$_')") for @flows;
cmp_ok(psql(q{SELECT state_groups FROM flowpg.flow_stats WHERE flow_name = 'per_minute'}), '<=', 10000 * 7,
	'the state loaded after a restart holds the recent windows only');
is(psql("SELECT flow_mismatches('per_minute')"), '0', 'per_minute is exact after the restart');

$node->stop;
done_testing();
