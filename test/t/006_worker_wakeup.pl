# flowpg: a flow created in a transaction that commits some time after
# create_flow returned is run by the flowpg worker.
#
# create_flow asks the launcher for a worker of the database at once, before
# its transaction commits.  A worker that starts then and finds no committed
# flow must not leave the database without a worker once the flow commits:
# changes to the source must reach the sink without flush_flow, within a few
# refresh intervals (here 200ms), not minutes later.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my $node = FlowpgTest::node('worker_wakeup');

sub poll_until { return FlowpgTest::poll_until($node, @_); }

my $oracle_sql = $FlowpgTest::per_minute_oracle;
my $pending_sql = $FlowpgTest::per_minute_pending;

$node->safe_psql('postgres', 'CREATE DATABASE flowdb');
$node->safe_psql(
	'flowdb', q{
CREATE EXTENSION flowpg;
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL);
INSERT INTO metrics
  SELECT timestamptz '2024-01-01 00:00:00+00' + i * interval '7 seconds', i % 5, i
  FROM generate_series(0, 999) AS i;
});

# The flow is created in a transaction that commits 2 s later.
my $session = $node->background_psql('flowdb');
$session->query_safe(q{BEGIN});
$session->query_safe(
	q{SELECT flowpg.create_flow('per_minute', 'metrics_per_minute',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
      FROM metrics GROUP BY device, date_trunc('minute', ts)$$,
  mode => 'batching')});
sleep(2);
$session->query_safe(q{COMMIT});
$session->quit;

$node->safe_psql('flowdb',
	q{INSERT INTO metrics VALUES ('2024-01-01 00:00:01+00', 1, 1000), ('2024-01-01 05:00:00+00', 2, 1001)});
ok(poll_until('flowdb', $pending_sql, '0', 15),
	'the worker refreshed the change within 15 s, without flush_flow');
is($node->safe_psql('flowdb', $oracle_sql),
	'0', 'the sink equals the query over the source');
is( $node->safe_psql(
		'flowdb',
		q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'flowpg worker' AND datname = 'flowdb'}
	),
	't',
	'a flowpg worker runs for flowdb');

# The same after the database's last flow was dropped (its worker leaves)
# and a new flow is created in a long transaction.
$node->safe_psql('flowdb', q{SELECT flowpg.drop_flow('per_minute')});
ok( poll_until(
		'flowdb',
		q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'flowpg worker' AND datname = 'flowdb'},
		'0', 15),
	'without flows the worker of flowdb leaves');
$session = $node->background_psql('flowdb');
$session->query_safe(q{BEGIN});
$session->query_safe(
	q{SELECT flowpg.create_flow('per_minute', 'metrics_per_minute',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
      FROM metrics GROUP BY device, date_trunc('minute', ts)$$,
  mode => 'batching')});
sleep(2);
$session->query_safe(q{COMMIT});
$session->quit;

$node->safe_psql('flowdb',
	q{INSERT INTO metrics VALUES ('2024-01-01 00:00:02+00', 1, 2000), ('2024-01-01 06:00:00+00', 3, 2001)});
ok(poll_until('flowdb', $pending_sql, '0', 15),
	'again the worker refreshed the change within 15 s, without flush_flow');
is($node->safe_psql('flowdb', $oracle_sql),
	'0', 'the sink equals the query over the source');

# Writers of batching flows wake the worker only once a batching flow can be
# due (the worker publishes the earliest next run): no change may be left
# waiting because of it.  With a refresh interval of 3 s: a change right
# after a run (within the interval), a change after the flow was idle for
# longer than the interval, and a flow created and changed at once.
$node->append_conf('postgresql.conf', "flowpg.min_refresh_interval = '3s'");
$node->reload;
$node->safe_psql('flowdb', q{INSERT INTO metrics VALUES ('2024-01-01 00:00:03+00', 1, 3000)});
ok(poll_until('flowdb', $pending_sql, '0', 15), 'a change is refreshed without flush_flow');
$node->safe_psql('flowdb', q{INSERT INTO metrics VALUES ('2024-01-01 00:00:04+00', 1, 3001)});
ok(poll_until('flowdb', $pending_sql, '0', 15),
	'a change within the refresh interval after a run is refreshed once the interval passed');
sleep(4);
$node->safe_psql('flowdb', q{INSERT INTO metrics VALUES ('2024-01-01 07:00:00+00', 4, 3002)});
ok(poll_until('flowdb', $pending_sql, '0', 15),
	'a change after the flow was idle for longer than the interval is refreshed');
$node->safe_psql(
	'flowdb', q{
CREATE TABLE other (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL);
SELECT flowpg.create_flow('other_per_minute', 'other_sink',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n FROM other GROUP BY 1, 2$$,
  mode => 'batching');
});
$node->safe_psql('flowdb', q{INSERT INTO other VALUES ('2024-01-01 00:00:05+00', 1, 1)});
ok( poll_until(
		'flowdb',
		q{SELECT pending FROM flowpg.flow_stats WHERE flow_name = 'other_per_minute'},
		'0', 15),
	'a flow created while the other waits out its interval is refreshed without flush_flow');
is( $node->safe_psql(
		'flowdb',
		q{SELECT count(*) FROM ((SELECT device, minute, n FROM other_sink EXCEPT ALL
		    SELECT device, date_trunc('minute', ts), count(*) FROM other GROUP BY 1, 2)
		  UNION ALL (SELECT device, date_trunc('minute', ts), count(*) FROM other GROUP BY 1, 2
		    EXCEPT ALL SELECT device, minute, n FROM other_sink)) d}),
	'0', 'its sink equals its query');
is($node->safe_psql('flowdb', $oracle_sql),
	'0', 'the first sink equals its query');

$node->stop;
done_testing();
