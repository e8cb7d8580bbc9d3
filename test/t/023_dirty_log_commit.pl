# flowpg: a streaming writer's commit-time fallback to the dirty log wakes
# the worker at once.
#
# A statement of more rows than a partial may hold groups (a quarter of
# flowpg.queue_memory, here its minimum of 256kB: 1024 groups) is not
# queued: at PRE_COMMIT the streaming capture writes the rows' windows to
# the dirty log instead.  The dirty log flags the flow for the worker in its
# own PRE_COMMIT callback.  That callback used to be registered at the
# backend's first dirty-log write -- here, inside the streaming PRE_COMMIT
# callback, while the callbacks were being called -- so it missed this
# commit: the flow was not flagged, and the worker, woken at COMMIT, found
# nothing to do until its periodic look, flowpg.min_refresh_interval later
# (60 s here).  The rows must reach the sink within a few seconds, without
# flush_flow, in a backend whose first dirty-log write is that fallback.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = FlowpgTest::node('dirty_commit', q{
fsync = off
synchronous_commit = off
flowpg.min_refresh_interval = '60s'
flowpg.queue_memory = '256kB'
flowpg.flush_interval = '100ms'
});

$node->safe_psql('postgres', 'CREATE DATABASE flows');
$node->safe_psql('flows', $FlowpgTest::mismatches_function);
$node->safe_psql('flows', q{
CREATE EXTENSION flowpg;
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL);
SELECT flowpg.create_flow('s', 's_sink',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
      FROM metrics GROUP BY 1, 2$$, mode => 'streaming');
});
is($node->safe_psql('flows', "SELECT mode FROM flowpg.flows WHERE flow_name = 's'"),
	'streaming', 'the flow streams');

# A small transaction, queued as usual: once it is in the sink the worker
# has run the flow's rounds (and its periodic look at the dirty log, which
# is next due a minute later).
$node->safe_psql('flows',
	"INSERT INTO metrics VALUES ('2024-01-01 00:00+00', 1, 1), ('2024-01-01 00:01+00', 2, 2)");
ok(FlowpgTest::poll_until($node, 'flows', 'SELECT coalesce(sum(n), 0) FROM s_sink', '2', 20),
	'a queued transaction reaches the sink');

# A new backend (every safe_psql is one) whose first dirty-log write is the
# commit-time fallback of 5000 rows (5000 groups).
$node->safe_psql('flows', q{
INSERT INTO metrics
  SELECT '2024-01-02 00:00+00'::timestamptz + i * interval '1 minute', i % 7, i
  FROM generate_series(1, 5000) i;
});

my $t0 = time();
my $in_sink = FlowpgTest::poll_until($node, 'flows', 'SELECT coalesce(sum(n), 0) FROM s_sink', '5002', 8);
ok($in_sink, 'the fallen-back rows reach the sink without flush_flow within 8 s');
if ($in_sink)
{
	note(sprintf('in the sink after %.1f s', time() - $t0));
}
else
{
	diag('sink rows: ' . $node->safe_psql('flows', 'SELECT coalesce(sum(n), 0) FROM s_sink'));
	diag('dirty log entries: ' . $node->safe_psql('flows', 'SELECT count(*) FROM flowpg.dirty_entries'));
}

# The same from a backend that wrote the dirty log before (the callback
# was registered then): a control, fast either way.
$node->safe_psql('flows', q{
SELECT flowpg.flush_flow('s');
INSERT INTO metrics
  SELECT '2024-01-03 00:00+00'::timestamptz + i * interval '1 minute', i % 7, i
  FROM generate_series(1, 5000) i;
INSERT INTO metrics
  SELECT '2024-01-04 00:00+00'::timestamptz + i * interval '1 minute', i % 7, i
  FROM generate_series(1, 5000) i;
});
ok(FlowpgTest::poll_until($node, 'flows', 'SELECT coalesce(sum(n), 0) FROM s_sink', '15002', 8),
	'a second fallback of the same backend reaches the sink');

is($node->safe_psql('flows', "SELECT flowpg.flush_flow('s') >= 0, flow_mismatches('s')"),
	't|0', 'the flow is exact after flush_flow');

$node->stop;
done_testing();
