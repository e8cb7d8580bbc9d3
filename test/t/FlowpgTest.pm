# FlowpgTest: what flowpg's TAP tests share.
#
#   my $node = FlowpgTest::node('name', "extra = 'conf'");   # started, flowpg preloaded
#   $FlowpgTest::mismatches_function                          # CREATE FUNCTION flow_mismatches(flow)
#   $FlowpgTest::sink_dependencies                            # "flows with a sink dependency/flows"
#   FlowpgTest::poll_until($node, $db, $sql, $expected, $seconds)
#   my $bin = FlowpgTest::flowload();                          # test/tools/flowload
#   my ($rc, $out, $err) = FlowpgTest::run_flowload(@args);
package FlowpgTest;

use strict;
use warnings;
use Cwd qw(getcwd);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use Test::More;
use Time::HiRes qw(usleep time);

# The oracle of the tests' flow "per_minute" (metrics_per_minute over
# metrics(ts, device, value)): rows of the sink and of its query without a
# twin on the other side; 0 when exact.  And its pending dirty entries.
our $per_minute_oracle = q{
WITH q AS (SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
             FROM metrics GROUP BY device, date_trunc('minute', ts)),
     s AS (SELECT device, minute, n, total FROM metrics_per_minute)
SELECT (SELECT count(*) FROM (SELECT * FROM q EXCEPT ALL SELECT * FROM s) a)
     + (SELECT count(*) FROM (SELECT * FROM s EXCEPT ALL SELECT * FROM q) b)};
# flow_mismatches(flow): the same oracle for any flow (as sql/00_setup.sql
# has it): rows of the sink and of the flow's query without a twin.
our $mismatches_function = q{
CREATE FUNCTION flow_mismatches(flow text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE f record; cols text; n bigint;
BEGIN
	SELECT sink_table, query INTO STRICT f FROM flowpg.flows WHERE flow_name = flow;
	SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols
	  FROM pg_attribute WHERE attrelid = f.sink_table AND attnum > 0 AND NOT attisdropped
	   AND attname <> 'update_at';
	EXECUTE format('SELECT count(*) FROM ((SELECT %1$s FROM %2$s EXCEPT ALL SELECT * FROM (%3$s) q)
					UNION ALL (SELECT * FROM (%3$s) q EXCEPT ALL SELECT %1$s FROM %2$s)) d',
				   cols, f.sink_table, f.query) INTO n;
	RETURN n;
END $$};
# How many flows have their view depend on their sink (which makes DROP
# TABLE of the sink refuse), of how many: "n/n" when every one has.
our $sink_dependencies = q{
SELECT count(*) FILTER (WHERE EXISTS (
         SELECT 1 FROM pg_depend d
          WHERE d.classid = 'pg_class'::regclass AND d.objid = f.deps_view
            AND d.refclassid = 'pg_class'::regclass AND d.refobjid = f.sink_table
            AND d.deptype = 'n')) || '/' || count(*)
  FROM flowpg.flow f};
our $per_minute_pending =
  q{SELECT pending FROM flowpg.flow_stats WHERE flow_name = 'per_minute'};

# A started node with flowpg preloaded and a worker that refreshes often.
sub node
{
	my ($name, $extra) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'flowpg'
flowpg.min_refresh_interval = '200ms'
lc_messages = 'C'
} . ($extra // ''));
	$node->start;
	return $node;
}

# Polls $sql until it returns $expected; false after $seconds.
sub poll_until
{
	my ($node, $dbname, $sql, $expected, $seconds) = @_;
	my $deadline = time() + $seconds;
	while (1)
	{
		my ($ret, $out) = $node->psql($dbname, $sql);
		return 1 if $ret == 0 && $out eq $expected;
		return 0 if time() > $deadline;
		usleep(100_000);
	}
}

my $flowload_path;

# test/tools/flowload: $ENV{FLOWLOAD}, else built here if needed.
sub flowload
{
	return $flowload_path if $flowload_path;
	$flowload_path = $ENV{FLOWLOAD};
	if (!$flowload_path)
	{
		# scripts/run-tests.sh runs prove in test/ with TESTDIR=<copy>/test
		my @dirs = grep { -f "$_/flowload.c" }
		  (($ENV{TESTDIR} ? ("$ENV{TESTDIR}/tools") : ()), 'tools', 'test/tools');
		BAIL_OUT('test/tools/flowload.c not found from ' . getcwd()) unless @dirs;
		my ($out, $err);
		IPC::Run::run([ 'make', '-s', '-C', $dirs[0] ], '>', \$out, '2>', \$err)
		  or BAIL_OUT("building flowload failed: $out$err");
		$flowload_path = "$dirs[0]/flowload";
	}
	BAIL_OUT("$flowload_path is not executable") unless -x $flowload_path;
	return $flowload_path;
}

# Runs flowload; returns (exit status, stdout, stderr).
sub run_flowload
{
	my @args = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ flowload(), @args ], '>', \$out, '2>', \$err);
	return ($? >> 8, $out, $err);
}

1;
