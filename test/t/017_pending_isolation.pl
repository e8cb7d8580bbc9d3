# flowpg: a pending flow's start runs in a worker, never in the statement
# of the session whose DDL made it possible.
#
#   - a pending flow whose backfill sleeps 3 s and then fails: another
#     role's CREATE TABLE, under statement_timeout = 1s, succeeds at once
#     (before, the start ran inside that CREATE TABLE and made it time out);
#   - the flow's code does not see that session's settings: its error (in
#     the views and the log) does not hold the other session's app.secret;
#   - a flow that can start is active within seconds of its table
#     appearing, by itself.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = FlowpgTest::node('pending_isolation');

sub poll_until { return FlowpgTest::poll_until($node, @_); }

$node->safe_psql('postgres', 'CREATE DATABASE flowdb');
$node->safe_psql(
	'flowdb', q{
CREATE EXTENSION flowpg;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE SCHEMA alice AUTHORIZATION alice;
GRANT CREATE ON SCHEMA public TO alice, bob;
SET ROLE alice;
CREATE FUNCTION alice.slow_fail(k int) RETURNS int LANGUAGE plpgsql STABLE AS $$
BEGIN
	PERFORM pg_sleep(3);
	RAISE EXCEPTION 'the flow saw app.secret = %', coalesce(current_setting('app.secret', true), '<unset>');
END $$;
SELECT result FROM flowpg.execute($q$
CREATE FLOW slow_pending SINK TO public.slow_pending_out WITH (defer_on_missing_source = true)
AS SELECT k, sum(alice.slow_fail(k)) AS s FROM alice.src GROUP BY k$q$);
CREATE TABLE alice.src (k int);
INSERT INTO alice.src VALUES (1);
});

# the worker is now (or soon) in the 3 s start; bob's DDL does not wait for it
my $started = time();
my ($rc, $out, $err) = $node->psql(
	'flowdb', q{
SET ROLE bob;
SET statement_timeout = '1s';
SET app.secret = 'bobs-secret';
CREATE TABLE public.bob_t (a int);
GRANT SELECT ON public.bob_t TO alice;
ALTER TABLE public.bob_t ADD COLUMN b int;
});
my $elapsed = time() - $started;
is($rc, 0, "another role's DDL succeeds under statement_timeout = 1s") or diag($err);
cmp_ok($elapsed, '<', 3, "another role's DDL does not wait for the pending flow's start");

# the start failed in the worker, with the worker's settings, not bob's
ok(poll_until('flowdb',
		q{SELECT state_reason LIKE '%the flow saw app.secret = <unset>%'
		    FROM flowpg.information_schema_flows WHERE flow_name = 'slow_pending'},
		't', 30),
	'the start failed in a context of its own: no session setting seen');
is($node->safe_psql('flowdb',
		q{SELECT count(*) FROM flowpg.information_schema_flows WHERE state_reason LIKE '%bobs-secret%'}),
	'0', 'the other session\'s secret is in no flow\'s state');
# (the log has bob's statements themselves: log_statement = all)
is(scalar(grep { /bobs-secret/ && !/ statement: / } split(/\n/, slurp_file($node->logfile))),
	0, 'nor in the server log');
# it started (planning runs none of its functions); its backfill, online in
# the worker, is what fails
is($node->safe_psql('flowdb',
		q{SELECT state FROM flowpg.information_schema_flows WHERE flow_name = 'slow_pending'}),
	'failed', 'the flow whose backfill fails shows failed');

# a pending flow that can start does so by itself, promptly
$node->safe_psql(
	'flowdb', q{
SET ROLE alice;
SELECT result FROM flowpg.execute($q$
CREATE FLOW quick_pending SINK TO public.quick_pending_out WITH (defer_on_missing_source = true)
AS SELECT k, count(*) AS n FROM alice.quick_src GROUP BY k$q$);
});
$started = time();
$node->safe_psql('flowdb',
	q{SET ROLE alice; CREATE TABLE alice.quick_src AS SELECT i % 5 AS k FROM generate_series(1, 50) i});
ok(poll_until('flowdb',
		q{SELECT state FROM flowpg.information_schema_flows WHERE flow_name = 'quick_pending'},
		'active', 20),
	'a pending flow whose table appeared starts by itself');
cmp_ok(time() - $started, '<', 10, 'within seconds (even while another start fails)');
$node->safe_psql('flowdb', $FlowpgTest::mismatches_function);
is($node->safe_psql('flowdb',
		q{INSERT INTO alice.quick_src VALUES (9); SELECT flowpg.flush_flow('quick_pending') >= 0;
		  SELECT flow_mismatches('quick_pending')}),
	"t\n0", 'the started flow is exact');

$node->stop;
done_testing();
