# flowpg: databases come and go, the worker pool keeps serving new ones.
#
# The pool (src/base/pool.c) keeps a slot per database in shared memory, at
# most 256 of them.  A database takes one as soon as it asks for a worker
# (create_flow's commit) or the launcher looks at it.  Here 270 databases
# are created, each with flowpg and one flow (so that each takes its slot
# at once, whatever the launcher does), and dropped again.  A database
# created after that, with a streaming and a batching flow, must still get
# a worker: its sinks fill without flush_flow (the pool used to keep the
# slots of dropped databases for good: a new database found the pool full
# and never had a worker), and both flows are exact after flush_flow.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $ndatabases = 270;    # more than the pool's 256 slots

my $node = FlowpgTest::node('slots', q{
fsync = off
synchronous_commit = off
full_page_writes = off
max_worker_processes = 16
flowpg.flush_interval = '100ms'
});

my $started = time();

# One psql run: create a database, give it a flow, drop it; $ndatabases times.
my $script = '';
for my $i (1 .. $ndatabases)
{
	$script .= qq{
CREATE DATABASE churn_$i STRATEGY FILE_COPY;
\\c churn_$i
SET client_min_messages = warning;
CREATE EXTENSION flowpg;
CREATE TABLE t (ts timestamptz NOT NULL, k int NOT NULL);
SELECT flowpg.create_flow('f', 'f_sink', 'SELECT k, count(*) AS n FROM t GROUP BY k') > 0;
\\c postgres
DROP DATABASE churn_$i WITH (FORCE);
};
}
my ($ret, $out, $err) = $node->psql('postgres', $script, on_error_stop => 1);
is($ret, 0, "$ndatabases databases created with a flow and dropped")
  or diag($err);
note(sprintf('churn took %.1f s', time() - $started));

# A new database, with both engines.
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', $FlowpgTest::mismatches_function);
$node->safe_psql('fresh', q{
CREATE EXTENSION flowpg;
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL);
SELECT flowpg.create_flow('s', 's_sink',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
      FROM metrics GROUP BY 1, 2$$, mode => 'streaming');
SELECT flowpg.create_flow('b', 'b_sink',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
      FROM metrics GROUP BY 1, 2$$, mode => 'batching');
INSERT INTO metrics
  SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '7 seconds', i % 5, i
  FROM generate_series(1, 1000) i;
});

# No flush_flow: only a worker can fill the sinks.
my $t0 = time();
my $filled = FlowpgTest::poll_until($node, 'fresh',
	"SELECT (SELECT coalesce(sum(n), 0) FROM s_sink) || ' ' || (SELECT coalesce(sum(n), 0) FROM b_sink)",
	'1000 1000', 20);
ok($filled, "the new database's streaming and batching sinks fill without flush_flow");
if ($filled)
{
	note(sprintf('sinks filled after %.1f s', time() - $t0));
}
else
{
	diag('sink rows (streaming, batching): ' . $node->safe_psql('fresh',
		"SELECT (SELECT coalesce(sum(n), 0) FROM s_sink) || ' ' || (SELECT coalesce(sum(n), 0) FROM b_sink)"));
	diag($node->safe_psql('fresh',
		"SELECT flow_name, mode, state, state_reason FROM flowpg.flows ORDER BY 1"));
	diag('flowpg processes: ' . $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'flowpg worker' AND datname = 'fresh'"));
}

# A second change, then exactness after flush_flow.
$node->safe_psql('fresh', q{
INSERT INTO metrics VALUES ('2024-01-01 00:00:30+00', 1, 100000), ('2024-01-01 05:00+00', 9, 7);
});
is($node->safe_psql('fresh', q{
SELECT string_agg(flow_name || '=' || flow_mismatches(flow_name), ' ' ORDER BY flow_name)
  FROM (SELECT flow_name, flowpg.flush_flow(flow_name) FROM flowpg.flows) f}),
	'b=0 s=0', 'both flows exact after flush_flow');

note(sprintf('total %.1f s', time() - $started));
$node->stop;
done_testing();
