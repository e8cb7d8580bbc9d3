# flowload itself (test/tools/flowload.c): argument errors, an unreachable
# server, a load with aborts, savepoints, updates, deletes and late rows that
# verifies exact, and the verifier failing on deliberately corrupted sinks.
#
# The binary: $ENV{FLOWLOAD} when set, else test/tools/flowload, built here
# with "make -C test/tools" when it is missing or stale (make test builds it
# beforehand).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use Cwd qw(getcwd);
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $flowload = FlowpgTest::flowload();
note "flowload: $flowload";

# Run flowload; returns (exit status, stdout, stderr).
sub flowload
{
	my @args = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ $flowload, @args ],
		'<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	return ($? >> 8, $out, $err);
}

###############################################################################
# Arguments: every error exits non-zero with a message naming the problem.
###############################################################################

my ($rc, $out, $err) = flowload('--help');
is($rc, 0, '--help exits 0');
like($out, qr/^Usage: flowload \[OPTION\]/m, '--help prints the usage');
like($out, qr/--verify=FLOW/, '--help describes --verify');

my @bad_args = (
	[ [qw(--no-such-option)], qr/unrecognized option "--no-such-option"/, 'an unknown option' ],
	[ [qw(-q --rows 10)], qr/unrecognized option -q/, 'an unknown short option' ],
	[ [qw(--rows 10 --clients 0)], qr/invalid value "0" for --clients: must be between 1 and 1000/, '--clients 0' ],
	[ [qw(--rows 10 --clients many)], qr/invalid value "many" for --clients: an integer is expected/, '--clients many' ],
	[ [qw(--rows 10 --abort-fraction 2)], qr/invalid value "2" for --abort-fraction: must be between 0 and 1/, '--abort-fraction 2' ],
	[ [qw(--rows 10 --late-fraction -0.1)], qr/invalid value "-0.1" for --late-fraction/, '--late-fraction -0.1' ],
	[ [qw(--rows 10 --batch 0)], qr/invalid value "0" for --batch/, '--batch 0' ],
	[ [qw(--rows -5)], qr/invalid value "-5" for --rows/, '--rows -5' ],
	[ [qw(--duration 0)], qr/invalid value "0" for --duration: must be greater than 0/, '--duration 0' ],
	[ [qw(--rows 10 --rate 0)], qr/invalid value "0" for --rate/, '--rate 0' ],
	[ [qw(--rows 10 --method bulk)], qr/invalid value "bulk" for --method: expected copy, insert or single/, '--method bulk' ],
	[ [qw(--rows 10 --start 2024-13-01)], qr/invalid value "2024-13-01" for --start/, '--start with month 13' ],
	[ [qw(--rows 10 --span 0)], qr/invalid value "0" for --span/, '--span 0' ],
	[ [qw(--rows 10 --table)], qr/option --table requires an argument/, '--table without a name' ],
	[ [qw(--rows 10 --update-fraction 0.7 --delete-fraction 0.7)], qr/must not exceed 1/, 'update plus delete fractions above 1' ],
	[ [qw(--rows 10 --abort-fraction 1)], qr/would never commit a row/, '--abort-fraction 1 with --rows' ],
	[ [qw(--verify a,,b)], qr/empty flow name/, '--verify with an empty flow name' ],
	[ [qw(--rows 10 extra)], qr/unexpected argument "extra"/, 'a stray argument' ],
	[ [], qr/nothing to do/, 'no action at all' ],);
foreach my $case (@bad_args)
{
	my ($args, $re, $name) = @$case;
	($rc, $out, $err) = flowload(@$args);
	is($rc, 1, "$name: exit status 1");
	like($err, $re, "$name: clear message");
	like($err, qr/Try "flowload --help"/, "$name: points to --help");
	is($out, '', "$name: nothing on stdout");
}

###############################################################################
# A server: flowpg preloaded, a source table and two batching flows.
###############################################################################

my $node = PostgreSQL::Test::Cluster->new('flowload');
$node->init;
$node->append_conf(
	'postgresql.conf', qq{
shared_preload_libraries = 'flowpg'
flowpg.batching_partial_states = off
lc_messages = 'C'
fsync = off
synchronous_commit = off
});
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE flowload_db');
my $conninfo = $node->connstr('flowload_db');

# Unreachable servers fail clearly, before any load.
my $free_port = PostgreSQL::Test::Cluster::get_free_port();
($rc, $out, $err) = flowload('-d', "host=" . $node->host . " port=$free_port dbname=postgres", '--rows', '10');
is($rc, 1, 'no server on the port: exit status 1');
like($err, qr/flowload: could not connect to the server: .*\b$free_port\b/s,
	'no server on the port: clear message');
is($out, '', 'no server on the port: no report');
($rc, $out, $err) = flowload('-d', 'host=/no/such/directory dbname=postgres', '--verify', 'per_minute');
is($rc, 1, 'no such socket directory: exit status 1');
like($err, qr/could not connect to the server/, 'no such socket directory: clear message');

# A missing table.
($rc, $out, $err) = flowload('-d', $conninfo, '--rows', '10', '--table', 'no_such_table');
is($rc, 1, 'missing table: exit status 1');
like($err, qr/table "no_such_table" does not exist/, 'missing table: clear message');

# --create creates it.
($rc, $out, $err) = flowload('-d', $conninfo, '--rows', '100', '--table', 'created_by_flowload', '--create');
is($rc, 0, '--create: exit status 0') or diag($err);
is($node->safe_psql('flowload_db', 'SELECT count(*) FROM created_by_flowload'), '100',
	'--create: the table holds the rows');

$node->safe_psql(
	'flowload_db', q{
CREATE EXTENSION flowpg;
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value float8);
SELECT flowpg.create_flow('per_minute', 'metrics_per_minute',
  $$SELECT device, date_trunc('minute', ts) AS minute,
           count(*) AS n, sum(value) AS total, avg(value) AS mean,
           min(value) AS lo, max(value) AS hi
      FROM metrics GROUP BY device, date_trunc('minute', ts)$$,
  mode => 'batching');
SELECT flowpg.create_flow('per_hour', 'metrics_per_hour',
  $$SELECT date_trunc('hour', ts) AS hour, device % 7 AS bucket,
           count(value) AS n, sum(value)::float4 AS total4, stddev(value) AS sd,
           max(ts) AS last
      FROM metrics GROUP BY date_trunc('hour', ts), device % 7$$,
  mode => 'batching');
});

###############################################################################
# Loads with every kind of transaction, then verification.
###############################################################################

my @mix = (
	'--abort-fraction', '0.2', '--savepoint-fraction', '0.3',
	'--update-fraction', '0.1', '--delete-fraction', '0.05',
	'--late-fraction', '0.1', '--devices', '50');

($rc, $out, $err) = flowload('-d', $conninfo, '--clients', '4', '--batch', '50',
	'--method', 'insert', '--rows', '20000', @mix, '--seed', '42', '--json');
is($rc, 0, 'insert load: exit status 0') or diag($err);
my $r = eval { decode_json($out) };
ok($r, 'insert load: --json prints one JSON object') or diag($out);
is(scalar(() = $out =~ /\n/g), 1, 'insert load: --json output is a single line');
is($r->{rows}, 20000, 'insert load: 20000 rows committed');
cmp_ok($r->{aborted}, '>', 0, 'insert load: some transactions rolled back');
cmp_ok($r->{savepoints_rolled_back}, '>', 0, 'insert load: some savepoints rolled back');
cmp_ok($r->{transactions}, '>', 0, 'insert load: transactions counted');
cmp_ok($r->{late_rows}, '>', 0, 'insert load: some late rows');
ok(defined $r->{latency_ms}{p50} && defined $r->{latency_ms}{p99}, 'insert load: latency percentiles');
ok($r->{rows_per_s} > 0 && $r->{transactions_per_s} > 0, 'insert load: rates');
is($r->{ok}, JSON::PP::true, 'insert load: ok');

# The other two methods, verified in the same run.
($rc, $out, $err) = flowload('-d', $conninfo, '--clients', '3', '--batch', '200',
	'--method', 'copy', '--rows', '10000', @mix, '--seed', '43',
	'--verify', 'per_minute,per_hour');
is($rc, 0, 'copy load and verify: exit status 0') or diag("$out\n$err");
like($out, qr/^rows committed:\s+10000\b/m, 'copy load: text report of the rows');
like($out, qr/^transactions\/s:\s+[0-9.]+ \(committed\)/m, 'copy load: text report of transactions/s');
like($out, qr/^latency ms:\s+p50 [0-9.]+\s+p95 [0-9.]+\s+p99 [0-9.]+/m, 'copy load: text report of latencies');
like($out, qr/^flow per_minute: 0 mismatching rows \(sink (\d+) rows, query \1 rows\)$/m,
	'copy load: per_minute verified');
like($out, qr/^flow per_hour: 0 mismatching rows \(sink (\d+) rows, query \1 rows\)$/m,
	'copy load: per_hour verified');

($rc, $out, $err) = flowload('-d', $conninfo, '--clients', '2', '--batch', '5',
	'--method', 'single', '--rows', '2000', @mix, '--seed', '44');
is($rc, 0, 'single-row load: exit status 0') or diag($err);

# Verification alone, and the table's row count.
my $rows = $node->safe_psql('flowload_db', 'SELECT count(*) FROM metrics');
($rc, $out, $err) = flowload('-d', $conninfo, '--rows', '0',
	'--verify', 'per_minute,per_hour', '--expect-rows', $rows);
is($rc, 0, 'verify alone: exit status 0') or diag("$out\n$err");
like($out, qr/^flow per_minute: 0 mismatching rows \(sink (\d+) rows, query \1 rows\)$/m,
	'verify alone: per_minute exact');
like($out, qr/^flow per_hour: 0 mismatching rows/m, 'verify alone: per_hour exact');
like($out, qr/^table public\.metrics: $rows rows, as expected$/m, '--expect-rows met');
my ($groups) = $out =~ /^flow per_minute: 0 mismatching rows \(sink (\d+) rows/m;
cmp_ok($groups, '>', 1000, 'the sink has many groups');

($rc, $out, $err) = flowload('-d', $conninfo, '--verify', 'per_minute', '--json');
is($rc, 0, 'verify --json: exit status 0') or diag($err);
$r = eval { decode_json($out) };
is($r->{verify}[0]{flow}, 'per_minute', 'verify --json: the flow');
is($r->{verify}[0]{mismatches}, 0, 'verify --json: no mismatch');
is($r->{verify}[0]{sink_rows}, $groups, 'verify --json: sink rows');
like($err, qr/^flow per_minute: 0 mismatching rows/m, 'verify --json: the summary goes to stderr');

($rc, $out, $err) = flowload('-d', $conninfo, '--expect-rows', $rows + 1);
is($rc, 2, '--expect-rows not met: exit status 2');
like($out, qr/^table public\.metrics: $rows rows, expected @{[$rows + 1]}$/m, '--expect-rows not met: message');

($rc, $out, $err) = flowload('-d', $conninfo, '--verify', 'no_such_flow');
is($rc, 1, 'unknown flow: exit status 1');
like($out, qr/^flow no_such_flow: cannot verify: flow "no_such_flow" does not exist$/m,
	'unknown flow: clear message');

###############################################################################
# The verifier fails on corrupted sinks.
###############################################################################

my $key = q{(device, minute) = (SELECT device, minute FROM metrics_per_minute
                                 ORDER BY n DESC, device, minute LIMIT 1)};

# A changed count: one row only in the sink, one only in the query.
$node->safe_psql('flowload_db', "UPDATE metrics_per_minute SET n = n + 1 WHERE $key");
($rc, $out, $err) = flowload('-d', $conninfo, '--verify', 'per_minute,per_hour');
is($rc, 2, 'sink row updated: exit status 2');
like($out, qr/^flow per_minute: 2 mismatching rows \(sink $groups rows, query $groups rows\)$/m,
	'sink row updated: 2 mismatching rows');
like($out, qr/^  only in the sink:  \(device=\d+, minute=.*, n=\d+, total=/m, 'sink row updated: the sink row shown');
like($out, qr/^  only in the query: \(device=\d+, minute=/m, 'sink row updated: the query row shown');
like($out, qr/^flow per_hour: 0 mismatching rows/m, 'sink row updated: the other flow still exact');
$node->safe_psql('flowload_db', "UPDATE metrics_per_minute SET n = n - 1 WHERE $key");
($rc, $out, $err) = flowload('-d', $conninfo, '--verify', 'per_minute');
is($rc, 0, 'sink row restored: exact again') or diag($out);

# A deleted row.
$node->safe_psql('flowload_db',
	"CREATE TABLE saved AS SELECT * FROM metrics_per_minute WHERE $key; DELETE FROM metrics_per_minute WHERE $key");
($rc, $out, $err) = flowload('-d', $conninfo, '--verify', 'per_minute', '--json');
is($rc, 2, 'sink row deleted: exit status 2');
$r = eval { decode_json($out) };
is($r->{verify}[0]{mismatches}, 1, 'sink row deleted: 1 mismatching row');
is($r->{verify}[0]{only_in_query}, 1, 'sink row deleted: the row is only in the query');
is($r->{verify}[0]{sink_rows}, $groups - 1, 'sink row deleted: one sink row fewer');
is($r->{ok}, JSON::PP::false, 'sink row deleted: not ok');
like($err, qr/^flow per_minute: 1 mismatching rows \(sink @{[$groups - 1]} rows, query $groups rows\)$/m,
	'sink row deleted: summary');

# A duplicated row (EXCEPT ALL: multiplicities count), in the sink of a
# projection flow (a sink keyed by a unique index cannot hold one, and its
# index cannot be dropped while the flow writes by it).
$node->safe_psql('flowload_db', 'INSERT INTO metrics_per_minute SELECT * FROM saved');
$node->safe_psql('flowload_db',
	q{SELECT flowpg.create_flow('dev0', 'dev0_rows', $$SELECT ts, device, value FROM metrics$$)});
# (the first flush completes the backfill here; the second is the worker's,
# whose first round has taken the flow over when it returns)
$node->safe_psql('flowload_db', q{SELECT flowpg.flush_flow('dev0')});
$node->safe_psql('flowload_db', q{SELECT flowpg.flush_flow('dev0')});
my $dev0 = $node->safe_psql('flowload_db', 'SELECT count(*) FROM dev0_rows');
$node->safe_psql('flowload_db', 'INSERT INTO dev0_rows SELECT * FROM dev0_rows LIMIT 1');
($rc, $out, $err) = flowload('-d', $conninfo, '--verify', 'dev0');
is($rc, 2, 'sink row duplicated: exit status 2');
like($out, qr/^flow dev0: 1 mismatching rows \(sink @{[$dev0 + 1]} rows, query $dev0 rows\)$/m,
	'sink row duplicated: 1 mismatching row');
$node->safe_psql('flowload_db',
	'DELETE FROM dev0_rows WHERE ctid = (SELECT max(ctid) FROM dev0_rows)');
($rc, $out, $err) = flowload('-d', $conninfo, '--verify', 'dev0,per_minute');
is($rc, 0, 'duplicate removed: exact again') or diag($out);
$node->safe_psql('flowload_db', q{SELECT flowpg.drop_flow('dev0')});

# Floats: within the tolerance is exact, beyond it is not.
$node->safe_psql('flowload_db',
	'UPDATE metrics_per_minute SET total = total * (1 + 1e-12), mean = mean * (1 - 3e-11)');
($rc, $out, $err) = flowload('-d', $conninfo, '--verify', 'per_minute');
is($rc, 0, 'floats within the tolerance: exit status 0') or diag($out);
($rc, $out, $err) = flowload('-d', $conninfo, '--verify', 'per_minute', '--tolerance', '0');
is($rc, 2, 'floats with --tolerance 0: exit status 2');
like($out, qr/^flow per_minute: [1-9]\d* mismatching rows/m, 'floats with --tolerance 0: mismatching');
$node->safe_psql('flowload_db', "UPDATE metrics_per_minute SET total = total * (1 + 1e-6) WHERE $key");
($rc, $out, $err) = flowload('-d', $conninfo, '--verify', 'per_minute');
is($rc, 2, 'float beyond the tolerance: exit status 2');
like($out, qr/^flow per_minute: 2 mismatching rows/m, 'float beyond the tolerance: 2 mismatching rows');
($rc, $out, $err) = flowload('-d', $conninfo, '--verify', 'per_minute', '--tolerance', '1e-5');
is($rc, 0, 'float within a larger --tolerance: exit status 0') or diag($out);

# A float4 column (per_hour.total4) and NULLs in a float column.
$node->safe_psql('flowload_db',
	'UPDATE metrics_per_hour SET total4 = total4 * 1.01 WHERE (hour, bucket) = (SELECT hour, bucket FROM metrics_per_hour ORDER BY hour, bucket LIMIT 1)');
($rc, $out, $err) = flowload('-d', $conninfo, '--verify', 'per_hour');
is($rc, 2, 'float4 column changed: exit status 2');
like($out, qr/^flow per_hour: 2 mismatching rows/m, 'float4 column changed: 2 mismatching rows');
$node->safe_psql('flowload_db',
	'UPDATE metrics_per_hour SET total4 = NULL WHERE (hour, bucket) = (SELECT hour, bucket FROM metrics_per_hour ORDER BY hour, bucket LIMIT 1)');
($rc, $out, $err) = flowload('-d', $conninfo, '--verify', 'per_hour');
is($rc, 2, 'float column set to NULL: exit status 2');
like($out, qr/total4=NULL/, 'float column set to NULL: shown as NULL');

$node->stop;
done_testing();
