# flowpg: exactness of a batching flow across crashes, under load.
#
# Several clients insert rows in small transactions (some roll back) while
# the flowpg worker refreshes the flow every 200ms.  Mid-load the flowpg
# worker is killed with SIGKILL, so the postmaster resets every process
# (crash recovery); later the whole server is stopped in immediate mode and
# started again.  Afterwards:
#
#   - every transaction whose COMMIT was acknowledged is in the source, no
#     rolled-back one is, and each committed transaction has all its rows
#     (a ledger row is written in the same transaction as the rows);
#   - the worker empties the dirty log by itself and the sink then equals
#     the flow's query over the source (EXCEPT ALL both ways);
#   - after flush_flow, the same.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(usleep time);

my $node = FlowpgTest::node('crash_recovery', "restart_after_crash = on\n");

sub poll_until { return FlowpgTest::poll_until($node, @_); }

$node->safe_psql('postgres', 'CREATE DATABASE flowdb');
$node->safe_psql(
	'flowdb', q{
CREATE EXTENSION flowpg;
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL, batch bigint);
CREATE TABLE ledger (batch bigint PRIMARY KEY, nrows int NOT NULL);
INSERT INTO metrics
  SELECT timestamptz '2024-01-01 00:00:00+00' + i * interval '3 seconds', i % 10, i % 1000, NULL
  FROM generate_series(0, 1999) AS i;
SELECT flowpg.create_flow('per_minute', 'metrics_per_minute',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
      FROM metrics GROUP BY device, date_trunc('minute', ts)$$,
  mode => 'batching');
});
my $initial_rows = 2000;

my $oracle_sql = $FlowpgTest::per_minute_oracle;
my $pending_sql = $FlowpgTest::per_minute_pending;
my $worker_pid_sql = q{
SELECT pid FROM pg_stat_activity
 WHERE backend_type = 'flowpg worker' AND datname = 'flowdb'};

###############################################################################
# Load: clients running psql scripts of small transactions.  Each
# transaction (batch) has a unique id, inserts 1..13 rows over two hours of
# time values (so it dirties one or several windows) and its ledger row;
# every fifth rolls back.  psql echoes "sent B" before it and "committed B"
# once COMMIT succeeded, so an acknowledged commit is known; a batch that
# was sent but neither acknowledged nor rolled back (a crash during it) may
# or may not have committed.
###############################################################################
my $tmp = PostgreSQL::Test::Utils::tempdir;
my $psql = $node->installed_command('psql');
my $connstr = $node->connstr('flowdb');
# Three writers, and (from phase 2 on) one client that calls flush_flow in
# a loop, racing with the worker.
my @clients =
  map { { id => $_, round => 0, pid => undef, enabled => 1 } } (1 .. 4);
$clients[3]{flusher} = 1;
$clients[3]{enabled} = 0;
my @outputs;

sub start_client
{
	my ($c) = @_;
	$c->{round}++;
	my $base = ($c->{id} * 1000 + $c->{round}) * 10000;
	my $script = "$tmp/c$c->{id}_r$c->{round}.sql";
	my $out = "$tmp/c$c->{id}_r$c->{round}.out";
	open my $fh, '>', $script or die "could not write $script: $!";
	if ($c->{flusher})
	{
		print $fh "SELECT flowpg.flush_flow('per_minute') >= 0;\n"
		  . "SELECT pg_sleep(0.05);\n"
		  for (1 .. 2000);
		close $fh;
		return spawn_psql($c, $script, $out);
	}
	# psql's ERROR variable tells whether the last statement failed; "bad"
	# remembers a failure of any statement of the transaction (then COMMIT
	# only rolls back).
	my $check = "\\if :ERROR\n\\set bad 1\n\\endif\n";
	print $fh "\\set bad 0\n";
	for my $k (1 .. 3000)
	{
		my $b = $base + $k;
		my $nrows = 1 + $b % 13;
		print $fh "\\echo sent $b\nBEGIN;\n"
		  . "INSERT INTO metrics SELECT timestamptz '2024-01-01 00:00:00+00'"
		  . " + ((${b}::bigint * 7919 + i * 104729) % 7200) * interval '1 second',"
		  . " ($b + i) % 10, ($b * 31 + i) % 1000, $b FROM generate_series(1, $nrows) i;\n"
		  . $check
		  . "INSERT INTO ledger VALUES ($b, $nrows);\n"
		  . $check;
		if ($b % 5 == 0)
		{
			print $fh "ROLLBACK;\n\\echo rolledback $b\n";
		}
		else
		{
			print $fh "COMMIT;\n"
			  . $check
			  . "\\if :bad\n\\echo failed $b\n\\else\n"
			  . "\\echo committed $b\n\\endif\n";
		}
		print $fh "\\set bad 0\n";
	}
	close $fh;
	return spawn_psql($c, $script, $out);
}

sub spawn_psql
{
	my ($c, $script, $out) = @_;
	push @outputs, $out;
	my $pid = fork();
	die "fork failed: $!" unless defined $pid;
	if ($pid == 0)
	{
		open STDOUT, '>', $out or POSIX::_exit(1);
		open STDERR, '>', "$out.err" or POSIX::_exit(1);
		# a block of its own: exec returns only when it failed
		{ exec($psql, '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=0',
			'-d', $connstr, '-f', $script); }
		POSIX::_exit(127);
	}
	$c->{pid} = $pid;
	return;
}

# Keeps the clients running for $seconds: a client whose psql ended (the
# server went away, or its script is done) is started again once the server
# accepts connections.
sub run_load
{
	my ($seconds) = @_;
	my $end = time() + $seconds;
	while (time() < $end)
	{
		my $server_up;
		for my $c (grep { $_->{enabled} } @clients)
		{
			next if defined $c->{pid} && waitpid($c->{pid}, WNOHANG) == 0;
			$c->{pid} = undef;
			$server_up = ($node->psql('flowdb', 'SELECT 1') == 0)
			  unless defined $server_up;
			start_client($c) if $server_up;
		}
		usleep(50_000);
	}
	return;
}

sub stop_clients
{
	for my $c (@clients)
	{
		next unless defined $c->{pid};
		kill 'TERM', $c->{pid};
		waitpid($c->{pid}, 0);
		$c->{pid} = undef;
	}
	return;
}

# Phase 1: load, with the worker refreshing.
run_load(4);
cmp_ok(
	$node->safe_psql(
		'flowdb',
		q{SELECT runs FROM flowpg.flow_stats WHERE flow_name = 'per_minute'}),
	'>', 0,
	'the worker refreshed the flow during the load');
$clients[3]{enabled} = 1;

# Phase 2: SIGKILL the flowpg worker, preferably in the middle of a refresh.
my $worker_pid;
my $deadline = time() + 5;
while (time() < $deadline)
{
	$worker_pid = $node->safe_psql('flowdb', "$worker_pid_sql AND state = 'active' LIMIT 1");
	last if $worker_pid ne '';
	usleep(5_000);
}
note($worker_pid ne ''
	? 'killing the flowpg worker while it refreshes'
	: 'the flowpg worker was not seen refreshing; killing it anyway');
$worker_pid = $node->safe_psql('flowdb', "$worker_pid_sql LIMIT 1") if $worker_pid eq '';
like($worker_pid, qr/^\d+$/, 'found the flowpg worker of flowdb');
my $log_offset = -s $node->logfile;
kill 'KILL', $worker_pid;
ok( $node->wait_for_log(
		qr/all server processes terminated; reinitializing/, $log_offset),
	'killing the flowpg worker made the postmaster reinitialize');
ok(poll_until('flowdb', 'SELECT 1', '1', 30),
	'the server accepts connections again after crash recovery');
run_load(4);
my $new_worker = $node->safe_psql('flowdb', "$worker_pid_sql LIMIT 1");
ok($new_worker ne '' && $new_worker ne $worker_pid,
	'a new flowpg worker runs after crash recovery');

# Phase 3: immediate shutdown under load, then start again.
$node->stop('immediate');
$node->start;
run_load(3);
stop_clients();

# Wait until the killed clients' backends are gone (their transactions
# aborted), so that the source no longer changes.
ok( poll_until(
		'flowdb',
		q{SELECT count(*) FROM pg_stat_activity WHERE datname = 'flowdb'
		     AND backend_type = 'client backend' AND pid <> pg_backend_pid()},
		'0', 30),
	'the clients are gone');

###############################################################################
# What the clients know about their transactions.
###############################################################################
my (%sent, %acked, %rolledback, %failed);
for my $out (@outputs)
{
	next unless -e $out;
	open my $fh, '<', $out or die "could not read $out: $!";
	while (my $line = <$fh>)
	{
		if ($line =~ /^sent (\d+)$/) { $sent{$1} = 1; }
		elsif ($line =~ /^committed (\d+)$/) { $acked{$1} = 1; }
		elsif ($line =~ /^rolledback (\d+)$/) { $rolledback{$1} = 1; }
		elsif ($line =~ /^failed (\d+)$/) { $failed{$1} = 1; }
	}
	close $fh;
}
# The clients saw no SQL error (only lost connections, refused connections).
my @sql_errors;
for my $out (@outputs)
{
	next unless -e "$out.err";
	open my $fh, '<', "$out.err" or die "could not read $out.err: $!";
	push @sql_errors, grep { /ERROR:/ } <$fh>;
	close $fh;
}
is(scalar(@sql_errors), 0, 'the clients got no SQL errors')
  or diag(join('', @sql_errors[0 .. ($#sql_errors < 4 ? $#sql_errors : 4)]));
my $flushes = 0;
for my $out (grep { m{/c4_r\d+\.out$} } @outputs)
{
	open my $fh, '<', $out or die "could not read $out: $!";
	$flushes += grep { /^t$/ } <$fh>;
	close $fh;
}
cmp_ok($flushes, '>', 0, "flush_flow ran concurrently with the worker ($flushes calls)");
# Sent, not meant to roll back, not acknowledged: a crash hit it.
my %ambiguous =
  map { $_ => 1 } grep { $_ % 5 != 0 && !$acked{$_} } keys %sent;
note(sprintf(
		'%d transactions sent, %d commits acknowledged, %d rolled back, %d without an answer',
		scalar(keys %sent), scalar(keys %acked),
		scalar(keys %rolledback), scalar(keys %ambiguous)));
cmp_ok(scalar(keys %acked), '>', 100, 'the clients committed transactions');

my %ledger = map { split /\|/ } split /\n/,
  $node->safe_psql('flowdb', 'SELECT batch, nrows FROM ledger');
my @lost = grep { !exists $ledger{$_} } keys %acked;
is(scalar(@lost), 0, 'every acknowledged commit is in the source')
  or diag("lost: @lost[0 .. ($#lost < 9 ? $#lost : 9)]");
my @unexpected = grep { !$acked{$_} && !$ambiguous{$_} } keys %ledger;
is(scalar(@unexpected), 0,
	'no rolled-back or unknown transaction is in the source')
  or diag("unexpected: @unexpected[0 .. ($#unexpected < 9 ? $#unexpected : 9)]");
is( $node->safe_psql(
		'flowdb', q{
SELECT count(*) FROM (SELECT batch, count(*) AS n FROM metrics WHERE batch IS NOT NULL GROUP BY batch) m
  FULL JOIN ledger l USING (batch)
 WHERE m.n IS DISTINCT FROM l.nrows}),
	'0',
	'each committed transaction has all its rows, and no other rows exist');
is( $node->safe_psql(
		'flowdb',
		'SELECT count(*) = (SELECT sum(nrows) FROM ledger) + ' . $initial_rows
		  . ' FROM metrics'),
	't',
	'the source has the initial rows plus the rows of the committed transactions');

###############################################################################
# The sink.
###############################################################################
ok(poll_until('flowdb', $pending_sql, '0', 30),
	'the worker emptied the dirty log by itself');
is($node->safe_psql('flowdb', $oracle_sql),
	'0', 'after the worker: the sink equals the query over the source');
$node->safe_psql('flowdb', q{SELECT flowpg.flush_flow('per_minute')});
is($node->safe_psql('flowdb', $oracle_sql),
	'0', 'after flush_flow: the sink equals the query over the source');
is($node->safe_psql('flowdb', $pending_sql), '0', 'nothing is pending');
is( $node->safe_psql(
		'flowdb', q{SELECT count(*) FROM metrics_per_minute WHERE n <= 0}),
	'0',
	'no empty group in the sink');
is($node->safe_psql('flowdb', 'SELECT count(*) FROM flowpg.flow_errors'),
	'0', 'no flow run failed');
is( $node->safe_psql(
		'flowdb', q{SELECT state FROM flowpg.flows WHERE flow_name = 'per_minute'}),
	'active',
	'the flow is active');

$node->stop;
done_testing();
