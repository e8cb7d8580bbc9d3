# pg_dump / pg_restore with flowpg running, as it does by default.
#
# A database with streaming flows (windowed, global, projection), batching
# flows, and flows over a partitioned source is dumped while it is being
# written, and restored into new databases of the same server -- whose
# worker starts as soon as the catalog rows arrive -- with plain
# pg_restore, --single-transaction and -j 2.  Every restore exits 0; the
# restored flows stay 'restoring' until pg_restore has recreated their
# triggers and indexes, then are recomputed once; after further writes and
# flush_flow every sink equals its query.  A restore stopped after the data
# section shows its flows waiting (and flush_flow says why); the post-data
# section completes them.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = FlowpgTest::node('restore_running');

sub poll_until { return FlowpgTest::poll_until($node, @_); }

$node->safe_psql('postgres', 'CREATE DATABASE app');
# the oracle travels with the dump
$node->safe_psql('app', $FlowpgTest::mismatches_function);
$node->safe_psql(
	'app', q{
CREATE EXTENSION flowpg;
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL);
CREATE TABLE parted (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL)
	PARTITION BY RANGE (ts);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM ('2024-01-01 00:00+00') TO ('2024-01-02 00:00+00');
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM ('2024-01-02 00:00+00') TO ('2024-01-03 00:00+00');
CREATE TABLE parted_rest PARTITION OF parted DEFAULT;
INSERT INTO metrics SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '7 seconds', i % 13, i % 1000
  FROM generate_series(1, 20000) i;
INSERT INTO parted SELECT * FROM metrics;
SELECT flowpg.create_flow('s_win', 's_win',
  $q$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
       FROM metrics GROUP BY 1, 2$q$, mode => 'streaming');
SELECT flowpg.create_flow('s_global', 's_global',
  $q$SELECT count(*) AS n, sum(value) AS total, max(ts) AS last FROM metrics$q$, mode => 'streaming');
SELECT flowpg.create_flow('s_rows', 's_rows',
  $q$SELECT ts, device, value FROM metrics WHERE value > 990$q$, mode => 'streaming');
SELECT flowpg.create_flow('b_win', 'b_win',
  $q$SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n, sum(value) AS total
       FROM metrics GROUP BY 1, 2$q$, mode => 'batching');
SELECT flowpg.create_flow('p_s', 'p_s',
  $q$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
       FROM parted GROUP BY 1, 2$q$, mode => 'streaming');
SELECT flowpg.create_flow('p_b', 'p_b',
  $q$SELECT device, date_trunc('hour', ts) AS hour, count(*) AS n, sum(value) AS total
       FROM parted GROUP BY 1, 2$q$, mode => 'batching');
-- FROM ONLY an inheritance parent whose child came later (and has no capture triggers)
CREATE TABLE base (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL);
INSERT INTO base SELECT * FROM metrics WHERE device < 3;
SELECT flowpg.create_flow('o_s', 'o_s',
  $q$SELECT device, count(*) AS n, sum(value) AS total FROM ONLY base GROUP BY 1$q$);
CREATE TABLE base_child () INHERITS (base);
INSERT INTO base_child SELECT * FROM metrics WHERE device = 5;
});
# A hostile flow: its window makes its owner superuser when run as anyone
# else.  Restoring it (as a superuser) must not.
$node->safe_psql('postgres', 'CREATE ROLE regress_evil LOGIN');
$node->safe_psql(
	'app', q{
CREATE SCHEMA evil AUTHORIZATION regress_evil;
GRANT USAGE ON SCHEMA evil TO PUBLIC;
SET ROLE regress_evil;
CREATE TABLE evil.src (ts timestamptz NOT NULL, v int NOT NULL);
INSERT INTO evil.src VALUES ('2024-01-01 10:00+00', 1);
CREATE FUNCTION evil.escalate() RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	IF current_user <> 'regress_evil' THEN
		EXECUTE 'ALTER ROLE regress_evil SUPERUSER';
	END IF;
END $f$;
CREATE FUNCTION evil.hour(t timestamptz) RETURNS timestamptz LANGUAGE plpgsql IMMUTABLE AS $f$
BEGIN
	PERFORM evil.escalate();
	RETURN date_trunc('hour', t);
END $f$;
SELECT flowpg.create_flow('e_s', 'evil.e_s',
  $q$SELECT evil.hour(ts) AS hour, count(*) AS n, sum(v) AS total FROM evil.src GROUP BY 1$q$);
});

my @flows = qw(b_win o_s p_b p_s s_global s_rows s_win);
# (the hostile flow's oracle runs as its owner: run as anyone else, its
# query would be the very hazard the test is about)
my $exact_sql = q{SELECT string_agg(flow_name || '=' || flow_mismatches(flow_name), ' ' ORDER BY flow_name)
  FROM flowpg.flows WHERE flow_name <> 'e_s'};
my $evil_exact_sql = q{SET ROLE regress_evil; SELECT flow_mismatches('e_s')};
my $exact = join(' ', map { "$_=0" } @flows);
my $states_sql = q{SELECT string_agg(DISTINCT state, ',') FROM flowpg.flows};
my $flush_sql = q{SELECT count(flowpg.flush_flow(flow_name)) FROM flowpg.flows};
my $writes = q{
INSERT INTO metrics SELECT '2024-01-02 10:00+00'::timestamptz + i * interval '3 seconds', i % 7, 1000 - i % 20
  FROM generate_series(1, 500) i;
INSERT INTO parted SELECT * FROM metrics WHERE ts >= '2024-01-02 10:00+00';
UPDATE metrics SET value = value + 1 WHERE device = 3 AND ts < '2024-01-01 02:00+00';
UPDATE parted SET ts = ts + interval '1 day' WHERE device = 4 AND ts < '2024-01-01 01:00+00';
DELETE FROM metrics WHERE device = 5 AND ts < '2024-01-01 03:00+00';
DELETE FROM parted WHERE device = 6 AND ts > '2024-01-01 20:00+00';
INSERT INTO base VALUES ('2024-01-03 00:00+00', 1, 1);
INSERT INTO base_child VALUES ('2024-01-03 00:00+00', 1, 1);
INSERT INTO evil.src VALUES ('2024-01-01 11:00+00', 2);
};

$node->safe_psql('app', $flush_sql);
is($node->safe_psql('app', $exact_sql), $exact, 'the original flows are exact');

# Dump while the source is being written (the dump's snapshot is consistent).
$node->safe_psql('app', $writes);
my $dump = $PostgreSQL::Test::Utils::tmp_check . '/app.dump';
my $dumpdir = $PostgreSQL::Test::Utils::tmp_check . '/app.dir';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', 'app' ], 'pg_dump -Fc');
$node->command_ok([ 'pg_dump', '-Fd', '-f', $dumpdir, '-d', 'app' ], 'pg_dump -Fd');

my %restores = (
	r_plain => [ $dump ],
	r_single => [ '--single-transaction', $dump ],
	r_jobs => [ '-j', '2', $dumpdir ],);
for my $db (sort keys %restores)
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->command_ok([ 'pg_restore', '-d', $db, @{ $restores{$db} } ],
		"$db: pg_restore @{ $restores{$db} } exits 0");
	ok(poll_until($db, $states_sql, 'active', 30), "$db: the worker makes the restored flows active");
	is( $node->safe_psql(
			$db, q{SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'flowpg%'}),
		$node->safe_psql(
			'app', q{SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'flowpg%'}),
		"$db: the triggers are pg_restore's, none twice");
	is($node->safe_psql($db, $FlowpgTest::sink_dependencies), '8/8',
		"$db: every restored flow's view depends on its sink again");
	# recomputed once from the restored source, without flush_flow
	ok(poll_until($db, $exact_sql, $exact, 30), "$db: the worker recomputes every sink from the source");
	$node->safe_psql($db, $writes);
	$node->safe_psql($db, $flush_sql);
	is($node->safe_psql($db, $exact_sql), $exact, "$db: after more writes and flush_flow every sink is exact");
	is($node->safe_psql($db, $evil_exact_sql), '0', "$db: the hostile flow too, as its owner sees it");
	is($node->safe_psql($db, q{SELECT count(*) FROM flowpg.flow_errors}), '0', "$db: no flow failed");
}

# A restore that stops after the data: the flows wait, and say for what.
$node->safe_psql('postgres', 'CREATE DATABASE r_partial');
$node->command_ok(
	[ 'pg_restore', '--section=pre-data', '--section=data', '-d', 'r_partial', $dump ],
	'r_partial: pre-data and data restored');
sleep(2);
is($node->safe_psql('r_partial', $states_sql), 'restoring', 'r_partial: the flows are restoring');
like(
	$node->safe_psql('r_partial', q{SELECT state_reason FROM flowpg.flows WHERE flow_name = 's_win'}),
	qr/restored from a dump: maintained once pg_restore has restored the capture triggers of table metrics/,
	'r_partial: and say what they wait for');
my ($rc, $out, $err) = $node->psql('r_partial', q{SELECT flowpg.flush_flow('p_b')});
isnt($rc, 0, 'r_partial: flush_flow refuses a flow being restored');
like($err, qr/flow "p_b" is being restored/, 'r_partial: with a clear message');
$node->safe_psql('r_partial', $writes);
$node->command_ok([ 'pg_restore', '--section=post-data', '-d', 'r_partial', $dump ],
	'r_partial: post-data restored');
ok(poll_until('r_partial', $states_sql, 'active', 30), 'r_partial: the flows become active');
$node->safe_psql('r_partial', $flush_sql);
is($node->safe_psql('r_partial', $exact_sql), $exact, 'r_partial: every sink is exact');

is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_evil'}),
	'f', 'restoring, recomputing and flushing a hostile flow ran none of its code with more rights');

# The original database went on unaffected.
$node->safe_psql('app', $flush_sql);
is($node->safe_psql('app', $exact_sql), $exact, 'the original flows are still exact');

$node->stop;
done_testing();
