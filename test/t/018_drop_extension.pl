# flowpg: DROP EXTENSION flowpg CASCADE while its workers are busy
# succeeds every time.
#
# Before, DROP locked flowpg's tables one by one (flow, dirty_log,
# flow_run, ...) while a worker's run, holding flow_run or dirty_log, came
# back for flow: a deadlock, and DROP was the victim in 5 of 6 attempts.
# Now every worker transaction takes all of flowpg's tables at its start,
# only when free, and DROP EXTENSION takes them first in the same order.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);

my $node = FlowpgTest::node('drop_extension', q{
flowpg.workers_per_database = 3
flowpg.flush_interval = '20ms'
max_worker_processes = 16
});

sub poll_until { return FlowpgTest::poll_until($node, 'flows', @_); }

$node->safe_psql('postgres', 'CREATE DATABASE flows');
$node->safe_psql('flows', q{
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL);
INSERT INTO metrics SELECT now() - i * interval '1 second', i % 10, i FROM generate_series(1, 20000) i;
-- a run of a quarter of a second (declared stable: flows refuse volatile functions)
CREATE FUNCTION busy_one(v int) RETURNS int STABLE LANGUAGE plpgsql
  AS $$ BEGIN IF v = 1 THEN PERFORM pg_sleep(0.25); END IF; RETURN v; END $$;
});

for my $round (1 .. 6)
{
	$node->safe_psql('flows', q{
CREATE EXTENSION flowpg;
SELECT flowpg.create_flow('recent_' || i, 'recent_out_' || i,
  $$SELECT device, count(*) AS n, sum(busy_one(value)) AS total FROM metrics WHERE ts > now() - interval '1 hour' GROUP BY device$$,
  mode => 'batching', eval_interval => '1 second') FROM generate_series(1, 3) i;
SELECT flowpg.create_flow('per_minute_' || i, 'per_minute_out_' || i,
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n FROM metrics GROUP BY 1, 2$$,
  mode => 'streaming') FROM generate_series(1, 2) i;
});
	ok(poll_until(q{SELECT count(*) >= 2 AND count(*) FILTER (WHERE state = 'active') >= 1
	                  FROM pg_stat_activity WHERE backend_type = 'flowpg worker' AND datname = 'flows'}, 't', 30),
		"round $round: two or more workers run, busy");
	# a writer too, so that streaming rounds record their runs meanwhile
	my ($wout, $werr) = ('', '');
	my $writer = IPC::Run::start(
		[ 'psql', '-XAtq', '-d', $node->connstr('flows'), '-c', q{
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		INSERT INTO metrics VALUES (clock_timestamp(), i % 10, i);
		COMMIT;
		PERFORM pg_sleep(0.01);
	END LOOP;
END $$} ], '>', \$wout, '2>', \$werr);
	usleep(300_000 + int(rand(1_500_000)));
	my ($rc, $out, $err) = $node->psql('flows',
		q{SET statement_timeout = '60s'; DROP EXTENSION flowpg CASCADE});
	$writer->finish;
	is($werr, '', "round $round: the concurrent writer was not hurt either");
	is($rc, 0, "round $round: DROP EXTENSION flowpg CASCADE succeeds") or diag($err);
	is($node->safe_psql('flows',
			q{SELECT count(*) FROM pg_extension WHERE extname = 'flowpg'}),
		'0', "round $round: the extension is gone");
	# the sinks stay, as drop_flow leaves them
	$node->safe_psql('flows', q{
SELECT format('DROP TABLE %s', string_agg(quote_ident(relname), ', '))
  FROM pg_class WHERE relkind = 'r' AND (relname LIKE 'recent_out_%' OR relname LIKE 'per_minute_out_%') \gexec
});
}

# a last round without the workers to lock out: nothing waits, nothing is left
is($node->safe_psql('flows',
		q{SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'flowpg%'}),
	'0', 'no capture trigger is left behind');

$node->stop;
done_testing();
