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

$node->stop;
done_testing();
