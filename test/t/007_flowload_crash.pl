# flowpg: a flowload run under crashes, then flowload's verifier.
#
# flowload loads a source from 4 clients (multi-row INSERT and COPY, 10% of
# the transactions rolled back, savepoints rolled back, some UPDATEs and
# DELETEs, late rows) while the worker refreshes a batching flow and a
# streaming-mode flow every 200ms.  Mid-load the flowpg worker is killed
# with SIGKILL (the postmaster resets every process); then the server is
# stopped in immediate mode and started again.  flowload --verify then
# flushes both flows and compares each sink with its query on the source:
# 0 mismatching rows.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = FlowpgTest::node('flowload_crash', "restart_after_crash = on\n");
$node->safe_psql('postgres', 'CREATE DATABASE flowdb');
$node->safe_psql('flowdb', q{
CREATE EXTENSION flowpg;
CREATE TABLE metrics (ts timestamptz, device int, value float8);
SELECT flowpg.create_flow('per_minute', 'per_minute',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total,
           min(value) AS lo, max(value) AS hi FROM metrics GROUP BY 1, 2$$, mode => 'batching');
SELECT flowpg.create_flow('per_hour', 'per_hour',
  $$SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n, avg(value) AS mean
      FROM metrics GROUP BY 1, 2$$, mode => 'streaming');
});
my $conninfo = 'host=' . $node->host . ' port=' . $node->port . ' dbname=flowdb';

# One flowload run in the background; a crash makes its clients fail, which
# is expected: what matters is what committed.
sub start_load
{
	my ($method, $seed) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ FlowpgTest::flowload(), '-d', $conninfo, '--clients', '4', '--batch', '50',
		  '--method', $method, '--duration', '6', '--devices', '50',
		  '--abort-fraction', '0.1', '--savepoint-fraction', '0.1',
		  '--update-fraction', '0.05', '--delete-fraction', '0.05',
		  '--late-fraction', '0.1', '--seed', $seed ],
		'>', \$out, '2>', \$err);
	return $h;
}

# 1. kill -9 the flowpg worker in the middle of a load
my $load = start_load('insert', 1);
ok(FlowpgTest::poll_until($node, 'flowdb',
	"SELECT count(*) > 0 FROM flowpg.flow_stats WHERE runs > 0", 't', 30),
	'the worker refreshes during the load');
my $pid = $node->safe_psql('flowdb',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'flowpg worker' ORDER BY backend_start LIMIT 1");
ok($pid =~ /^\d+$/, "found the flowpg worker ($pid)");
kill 'KILL', $pid;
$load->finish;
ok(FlowpgTest::poll_until($node, 'flowdb', 'SELECT 1', '1', 60),
	'the server is back after the worker was killed');

# 2. an immediate shutdown in the middle of a COPY load
$load = start_load('copy', 2);
usleep(2_000_000);
$node->stop('immediate');
$load->finish;
$node->start;

# 3. one more load after recovery, then verify
my ($rc, $out, $err) = FlowpgTest::run_flowload('-d', $conninfo, '--clients', '4',
	'--batch', '20', '--method', 'single', '--rows', '2000', '--devices', '50',
	'--abort-fraction', '0.1', '--seed', '3');
is($rc, 0, 'a load after recovery runs') or diag($err);
($rc, $out, $err) = FlowpgTest::run_flowload('-d', $conninfo, '--rows', '0',
	'--verify', 'per_minute,per_hour');
is($rc, 0, 'flowload --verify: both sinks equal their queries after the crashes')
  or diag("$out\n$err");
like($err . $out, qr/per_minute: 0 mismatching rows/, 'per_minute verified');
like($err . $out, qr/per_hour: 0 mismatching rows/, 'per_hour verified');
is($node->safe_psql('flowdb', 'SELECT count(*) FROM flowpg.flow_errors'), '0',
	'no flow failed');

$node->stop;
done_testing();
