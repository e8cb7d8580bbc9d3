# FlowpgTest: what flowpg's TAP tests share.
#
#   my $node = FlowpgTest::node('name', "extra = 'conf'");   # started, flowpg preloaded
#   $FlowpgTest::mismatches_function                          # CREATE FUNCTION flow_mismatches(flow)
#   $FlowpgTest::sink_dependencies                            # "flows with a sink dependency/flows"
#   $FlowpgTest::extension_objects                            # the extension's objects, described
#   FlowpgTest::upgrade_writer_sql($first)                     # a slow writer of metrics and pmetrics
#   my $node = FlowpgTest::upgrade_node('name', $old_install)  # an earlier release with sources
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
SELECT (SELECT count(*) FROM (SELECT q::text FROM q EXCEPT ALL SELECT s::text FROM s) a)
     + (SELECT count(*) FROM (SELECT s::text FROM s EXCEPT ALL SELECT q::text FROM q) b)};
# flow_mismatches(flow): the same oracle for any flow (as sql/00_setup.sql
# has it): rows of the sink and of the flow's query without a twin, rows
# compared exactly (as the text of their values in the sink's types).
our $mismatches_function = q{
CREATE FUNCTION flow_mismatches(flow text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE f record; sink_row text; query_row text; aliases text; n bigint;
BEGIN
	SELECT sink_table, query INTO STRICT f FROM flowpg.flows WHERE flow_name = flow;
	SELECT string_agg(format('s.%I', attname), ', ' ORDER BY attnum),
		   string_agg(format('CAST(q.c%s AS %s)', i, format_type(atttypid, atttypmod)), ', ' ORDER BY attnum),
		   string_agg(format('c%s', i), ', ' ORDER BY attnum)
	  INTO sink_row, query_row, aliases
	  FROM (SELECT attname, attnum, atttypid, atttypmod, row_number() OVER (ORDER BY attnum) AS i
			  FROM pg_attribute WHERE attrelid = f.sink_table AND attnum > 0 AND NOT attisdropped
			   AND attname NOT IN ('update_at', '__ts_placeholder')) a;
	EXECUTE format('WITH s AS (SELECT ROW(%1$s)::text AS r FROM %2$s s),
						 q AS (SELECT ROW(%3$s)::text AS r FROM (%4$s) q(%5$s))
					SELECT count(*) FROM ((SELECT r FROM s EXCEPT ALL SELECT r FROM q)
										  UNION ALL (SELECT r FROM q EXCEPT ALL SELECT r FROM s)) d',
				   sink_row, f.sink_table, query_row, f.query, aliases) INTO n;
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

# Every object of the flowpg extension, described (members, views'
# definitions, columns, constraints, functions with their ACL, strictness
# and volatility, relation ACLs): an updated database must have what a
# fresh install has.
our $extension_objects = q{
SELECT string_agg(x, E'\n' ORDER BY x) FROM (
  SELECT pg_describe_object(classid, objid, objsubid) AS x FROM pg_depend
   WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
     AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'flowpg')
  UNION ALL
  SELECT c.relname || ': ' || pg_get_viewdef(c.oid) FROM pg_class c
   WHERE c.relnamespace = 'flowpg'::regnamespace AND c.relkind = 'v'
  UNION ALL
  SELECT c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
         || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '') || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
    FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
    LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
   WHERE c.relnamespace = 'flowpg'::regnamespace
  UNION ALL
  SELECT conrelid::regclass || ': ' || pg_get_constraintdef(oid) FROM pg_constraint
   WHERE connamespace = 'flowpg'::regnamespace
  UNION ALL
  SELECT p.proname || '(' || pg_get_function_arguments(p.oid) || '): ' || coalesce(array_to_string(p.proacl, ','), '')
         || CASE WHEN p.proisstrict THEN ' strict' ELSE '' END || ' ' || p.provolatile::text
    FROM pg_proc p WHERE p.pronamespace = 'flowpg'::regnamespace
  UNION ALL
  SELECT c.relname || ' acl ' || coalesce(array_to_string(c.relacl, ','), '') FROM pg_class c
   WHERE c.relnamespace = 'flowpg'::regnamespace
) o};

# slow_roles_setup(node, seconds_per_row, flow names, seconds in the name):
# a database "flows" with flowpg, flow_mismatches() and two roles: ra owns
# EVAL INTERVAL '1s' batching flows (the names given), each a join of six
# rows whose every row sleeps seconds_per_row while slow_switch has a row
# (DELETE FROM slow_switch makes them fast); rb owns b1, a batching flow
# over b_src.  For the tests of the fair share of workers between roles.
sub slow_roles_setup
{
	my ($node, $seconds_per_row, @flows) = @_;
	my $names = join(', ', map { "'$_'" } @flows);
	$node->safe_psql('postgres', 'CREATE DATABASE flows');
	$node->safe_psql('flows', $mismatches_function);
	$node->safe_psql('flows', qq{
CREATE EXTENSION flowpg;
CREATE ROLE ra;
CREATE ROLE rb;
GRANT CREATE ON SCHEMA public TO ra, rb;
CREATE TABLE slow_switch ();
INSERT INTO slow_switch DEFAULT VALUES;
GRANT SELECT ON slow_switch TO ra;
-- slow while slow_switch has a row (stable: flows refuse volatile functions)
CREATE FUNCTION slow_stable(v int) RETURNS int STABLE LANGUAGE plpgsql
  AS \$\$ BEGIN IF EXISTS (SELECT FROM slow_switch) THEN PERFORM pg_sleep($seconds_per_row); END IF; RETURN v; END \$\$;
CREATE TABLE a_src (ts timestamptz NOT NULL, k int NOT NULL, v int NOT NULL);
CREATE TABLE a_dim (k int PRIMARY KEY, name text NOT NULL);
INSERT INTO a_src SELECT now() - i * interval '1 minute', i % 2, i FROM generate_series(1, 6) i;
INSERT INTO a_dim VALUES (0, 'even'), (1, 'odd');
CREATE TABLE b_src (ts timestamptz NOT NULL, k int NOT NULL);
GRANT SELECT, TRIGGER ON a_src, a_dim TO ra;
GRANT SELECT, TRIGGER ON b_src TO rb;
SET ROLE ra;
SELECT flowpg.create_flow(f, f || '_out',
  \$\$SELECT d.name, count(*) AS n, sum(slow_stable(s.v)) AS total
      FROM a_src s JOIN a_dim d USING (k) WHERE s.ts > now() - interval '1 day' GROUP BY d.name\$\$,
  mode => 'batching', eval_interval => '1 second', backfill => false)
  FROM unnest(ARRAY[$names]) f;
SET ROLE rb;
SELECT flowpg.create_flow('b1', 'b1_out', \$\$SELECT date_trunc('minute', ts) AS minute, k, count(*) AS n FROM b_src GROUP BY 1, 2\$\$,
  mode => 'batching');
});
	return;
}

# upgrade_writer_sql(from): a DO block that writes 400 transactions into
# metrics and pmetrics(ts, device, value) with updates and deletes, one
# commit each, slowly: a writer across a server restart or an update.
sub upgrade_writer_sql
{
	my ($from) = @_;
	return qq{
DO \$\$
BEGIN
	FOR i IN $from .. $from + 399 LOOP
		INSERT INTO metrics VALUES ('2024-01-01'::timestamptz + (i % 20000) * interval '7 seconds', i % 10, i);
		INSERT INTO pmetrics VALUES ('2024-01-01'::timestamptz + (i % 20000) * interval '7 seconds', i % 10, i);
		IF i % 20 = 0 THEN
			UPDATE metrics SET value = value + 1 WHERE ts = '2024-01-01'::timestamptz + (i % 20000) * interval '7 seconds';
			DELETE FROM pmetrics WHERE ts = '2024-01-01'::timestamptz + ((i * 31) % 20000) * interval '7 seconds';
		END IF;
		COMMIT;
		PERFORM pg_sleep(0.005);
	END LOOP;
END \$\$};
}

# upgrade_node(name, install_path): a started node of an earlier release
# (scripts/previous-release.sh) with flowpg preloaded and a database
# "flows" holding flowpg, flow_mismatches() and the sources the upgrade
# tests write: metrics and pmetrics(ts, device, value), 20,000 rows each,
# pmetrics partitioned by day.
sub upgrade_node
{
	my ($name, $install) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name, install_path => $install);
	$node->init;
	$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'flowpg'
flowpg.min_refresh_interval = '200ms'
flowpg.batching_partial_states = off
fsync = off
lc_messages = 'C'
});
	$node->start;
	$node->safe_psql('postgres', 'CREATE DATABASE flows');
	$node->safe_psql('flows', $mismatches_function);
	$node->safe_psql('flows', q{
CREATE EXTENSION flowpg;
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL);
CREATE TABLE pmetrics (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL)
  PARTITION BY RANGE (ts);
CREATE TABLE pmetrics_1 PARTITION OF pmetrics FOR VALUES FROM ('2024-01-01') TO ('2024-01-02');
CREATE TABLE pmetrics_2 PARTITION OF pmetrics FOR VALUES FROM ('2024-01-02') TO ('2024-01-03');
INSERT INTO metrics SELECT '2024-01-01'::timestamptz + i * interval '7 seconds', i % 10, i FROM generate_series(1, 20000) i;
INSERT INTO pmetrics SELECT '2024-01-01'::timestamptz + i * interval '7 seconds', i % 10, i FROM generate_series(1, 20000) i;
});
	return $node;
}

# A started node with flowpg preloaded and a worker that refreshes often.
sub node
{
	my ($name, $extra) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'flowpg'
flowpg.min_refresh_interval = '200ms'
flowpg.batching_partial_states = off
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
