# The pool of workers per database and the streaming state in shared
# memory (issue 11):
#   1. a streaming flow stays fresh (<= 1 s, 20 probes) while a batching
#      flow of the same database runs a refresh of more than 10 s;
#   2. two slow batching refreshes made dirty together run in parallel;
#   3. a user-defined aggregate whose combine function fails on a value:
#      the round fails and is recorded, and the sink is exact again once
#      the value is gone;
#   4. a flow with a slow final function delays neither another flow's
#      freshness nor its flush_flow, and drop_flow of it returns quickly;
#   5. pg_terminate_backend of every flowpg worker under a 4-client load
#      into a streaming flow with 1M groups: the state stays in shared
#      memory (no refill), a new row is in the sink within a second.
# Every flow is exact at the end (sink = query, EXCEPT ALL both ways).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my $node = FlowpgTest::node('pool', qq{
flowpg.flush_interval = '100ms'
flowpg.state_memory = '512MB'
# bigflow's million groups of a day stay in the state (its windows would
# otherwise leave it as they age)
flowpg.state_keep = -1
flowpg.workers_per_database = 3
max_worker_processes = 16
});
sub psql { return $node->safe_psql('flows', $_[0]); }
sub poll_until { return FlowpgTest::poll_until($node, 'flows', @_); }

$node->safe_psql('postgres', 'CREATE DATABASE flows');
psql($FlowpgTest::mismatches_function);
psql(q{
CREATE EXTENSION flowpg;
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL);
SELECT flowpg.create_flow('fresh', 'fresh',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
      FROM metrics GROUP BY 1, 2$$, mode => 'streaming');

-- A slow expression, declared immutable so that flows accept it: a second a
-- row while slow_switch has a row (the checks at the end run at full speed).
CREATE TABLE slow_switch ();
INSERT INTO slow_switch DEFAULT VALUES;
CREATE FUNCTION slow_one(v int) RETURNS int IMMUTABLE LANGUAGE plpgsql
  AS $$ BEGIN IF EXISTS (SELECT FROM slow_switch) THEN PERFORM pg_sleep(1); END IF; RETURN v; END $$;
CREATE TABLE slow1_src (ts timestamptz NOT NULL, v int NOT NULL);
CREATE TABLE slow2_src (ts timestamptz NOT NULL, v int NOT NULL);
CREATE TABLE slow3_src (ts timestamptz NOT NULL, v int NOT NULL);
SELECT flowpg.create_flow(f, f,
  format($$SELECT date_trunc('hour', ts) AS hour, sum(slow_one(v)) AS total FROM %I GROUP BY 1$$, f || '_src'),
  mode => 'batching')
  FROM unnest(ARRAY['slow1', 'slow2', 'slow3']) f;

-- Commit to visible in the sink of "fresh", in ms (-1: not within 5 s).
CREATE PROCEDURE probe(d int, INOUT ms float8 DEFAULT NULL) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz;
BEGIN
	INSERT INTO metrics VALUES (clock_timestamp(), d, 1);
	COMMIT;
	t0 := clock_timestamp();
	LOOP
		PERFORM 1 FROM fresh WHERE device = d;
		EXIT WHEN FOUND;
		IF clock_timestamp() - t0 > interval '5 s' THEN ms := -1; RETURN; END IF;
		PERFORM pg_sleep(0.005);
	END LOOP;
	ms := round(extract(epoch FROM clock_timestamp() - t0) * 1000);
END $$;
});
my $next_device = 1000;

# Runs $n probes $gap_ms apart; returns the list of their times.
sub probes
{
	my ($n, $gap_ms) = @_;
	my @ms;
	for (1 .. $n)
	{
		push @ms, psql("CALL probe(" . $next_device++ . ")");
		usleep($gap_ms * 1000);
	}
	return @ms;
}

sub refreshing
{
	my ($flow) = @_;
	return psql(qq{SELECT count(*) FROM pg_stat_activity
	                WHERE backend_type = 'flowpg worker' AND query = 'flowpg: refreshing flow $flow'});
}

###############################################################################
# 1. Freshness during a long batching refresh.
ok(poll_until(q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'flowpg worker'}, 't', 20),
	'a worker runs for the database');
my @idle = probes(3, 50);
is(scalar(grep { $_ < 0 || $_ > 1000 } @idle), 0, "fresh is fresh when idle: @idle");
psql(q{INSERT INTO slow1_src SELECT '2024-01-01 10:00+00', i FROM generate_series(1, 12) i});
ok(poll_until("SELECT (" . q{SELECT count(*) FROM pg_stat_activity
                WHERE backend_type = 'flowpg worker' AND query = 'flowpg: refreshing flow slow1'} . ") = 1", 't', 10),
	'the worker refreshes slow1 (12 s)');
my $t0 = time();
my @during = probes(22, 300);
my $still = refreshing('slow1');
my @late = grep { $_ < 0 || $_ > 1000 } @during;
is(scalar(@late), 0, "22 probes during slow1's refresh are each fresh within 1 s: @during");
is($still, '1', 'slow1 was still refreshing after the probes');
note(sprintf('probes took %.1f s; median %s ms', time() - $t0, (sort { $a <=> $b } @during)[11]));
ok(poll_until(q{SELECT pending FROM flowpg.flow_stats WHERE flow_name = 'slow1'}, '0', 30),
	'slow1 finished its refresh');
cmp_ok(psql(q{SELECT extract(epoch FROM last_run_duration) FROM flowpg.flow_stats WHERE flow_name = 'slow1'}),
	'>=', 10, 'the refresh took at least 10 s');

###############################################################################
# 2. Two slow batching refreshes (4 s each) made dirty together run in parallel.
$t0 = time();
psql(q{BEGIN;
INSERT INTO slow2_src SELECT '2024-01-01 10:00+00', i FROM generate_series(1, 4) i;
INSERT INTO slow3_src SELECT '2024-01-01 10:00+00', i FROM generate_series(1, 4) i;
COMMIT});
ok(poll_until(q{SELECT sum(pending) FROM flowpg.flow_stats WHERE flow_name IN ('slow2', 'slow3')}, '0', 30),
	'slow2 and slow3 refreshed');
my $both = time() - $t0;
cmp_ok($both, '<', 6.5, sprintf('both done in %.1f s, clearly less than the 8 s of one after the other', $both));
isnt(psql(q{SELECT count(DISTINCT worker_pid) FROM flowpg.flow_stats WHERE flow_name IN ('slow2', 'slow3')}),
	'1', 'by two workers (flow_stats.worker_pid)');

###############################################################################
# 3. A combine function that fails on a value.
psql(q{
CREATE FUNCTION picky_combine(a bigint, b bigint) RETURNS bigint IMMUTABLE STRICT LANGUAGE plpgsql AS $$
BEGIN
	IF a = 666 OR b = 666 THEN RAISE EXCEPTION 'picky_combine refuses 666'; END IF;
	RETURN a + b;
END $$;
CREATE AGGREGATE picky_sum(int) (sfunc = int84pl, stype = bigint, combinefunc = picky_combine, initcond = '0');
CREATE TABLE picky_src (device int NOT NULL, v int NOT NULL);
INSERT INTO picky_src SELECT i % 5, i FROM generate_series(1, 100) i;
SELECT flowpg.create_flow('picky', 'picky',
  $$SELECT device, picky_sum(v) AS total, count(*) AS n FROM picky_src GROUP BY 1$$, mode => 'streaming');
});
is(psql(q{SELECT flowpg.flush_flow('picky') >= 0}), 't', 'picky flushes');
# its state loaded (after the backfill), so that 666 fails a round that applies it
ok(poll_until(q{SELECT state_groups > 0 FROM flowpg.flow_stats WHERE flow_name = 'picky'}, 't', 20),
	'picky has its state');
# the worker aggregates the batch's rows into groups of their own (the
# transition function takes 666), then combines each into the state
psql(q{INSERT INTO picky_src VALUES (42, 666)});
ok(poll_until(q{SELECT count(*) > 0 FROM flowpg.flow_errors WHERE flow_name = 'picky' AND message LIKE '%refuses 666%'}, 't', 20),
	'the failing round is recorded in flow_errors');
# the refill from the source combines 666 too: the flow stays failed until it is gone
is(psql(q{SELECT state FROM flowpg.flows WHERE flow_name = 'picky'}), 'failed', 'picky is shown failed');
psql(q{INSERT INTO picky_src VALUES (1, 1), (2, 2)});
psql(q{DELETE FROM picky_src WHERE v = 666});
ok(poll_until(q{SELECT flowpg.flush_flow('picky') >= 0 AND flow_mismatches('picky') = 0}, 't', 60),
	'once the value is deleted the sink is exact again');
cmp_ok(psql(q{SELECT state_repairs FROM flowpg.flow_stats WHERE flow_name = 'picky'}), '>', 0,
	'the unfinished round was repaired from the source');
is(psql(q{SELECT state FROM flowpg.flows WHERE flow_name = 'picky'}), 'active', 'picky is active again');

###############################################################################
# 4. A flow with a slow final function (3 s a group) holds one worker; the
#    others keep "fresh" fresh and flush it, and drop_flow returns quickly.
psql(q{
CREATE FUNCTION slow_final(n bigint) RETURNS bigint IMMUTABLE LANGUAGE plpgsql
  AS $$ BEGIN IF EXISTS (SELECT FROM slow_switch) THEN PERFORM pg_sleep(3); END IF; RETURN n; END $$;
CREATE AGGREGATE slow_count(int) (sfunc = int84pl, stype = bigint, combinefunc = int8pl,
  finalfunc = slow_final, initcond = '0');
CREATE TABLE sluggish_src (device int NOT NULL, v int NOT NULL);
SELECT flowpg.create_flow('sluggish', 'sluggish',
  $$SELECT device, slow_count(v) AS n FROM sluggish_src GROUP BY 1$$, mode => 'streaming');
CREATE PROCEDURE feed(seconds float8) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
	WHILE clock_timestamp() - t0 < seconds * interval '1 s' LOOP
		INSERT INTO sluggish_src VALUES ((random() * 3)::int, 1);
		COMMIT;
		PERFORM pg_sleep(0.2);
	END LOOP;
END $$;
});
my ($fout, $ferr) = ('', '');
my $feeder = IPC::Run::start([ 'psql', '-X', '-d', $node->connstr('flows'), '-c', 'CALL feed(12)' ],
	'>', \$fout, '2>', \$ferr);
ok(poll_until(q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'flowpg worker'
                  AND wait_event = 'PgSleep'}, 't', 15),
	"a worker is in sluggish's final function");
my @slow = probes(10, 200);
@late = grep { $_ < 0 || $_ > 1000 } @slow;
is(scalar(@late), 0, "10 probes of fresh while sluggish rounds run: each within 1 s: @slow");
$t0 = time();
psql(q{INSERT INTO metrics VALUES (clock_timestamp(), 7, 7)});
psql(q{SELECT flowpg.flush_flow('fresh')});
my $flush = time() - $t0;
cmp_ok($flush, '<', 1.5, sprintf('flush_flow(fresh) took %.2f s', $flush));
$t0 = time();
psql(q{SELECT flowpg.drop_flow('sluggish')});
my $drop = time() - $t0;
cmp_ok($drop, '<', 8, sprintf('drop_flow(sluggish) returned in %.1f s', $drop));
$feeder->kill_kill;
psql(q{DELETE FROM slow_switch});

is(psql(q{SELECT flowpg.flush_flow('fresh') >= 0 AND flow_mismatches('fresh') = 0}), 't', 'fresh is exact');
for my $f ('slow1', 'slow2', 'slow3', 'picky')
{
	is(psql(qq{SELECT flowpg.flush_flow('$f') >= 0 AND flow_mismatches('$f') = 0}), 't', "$f is exact");
}

###############################################################################
# 5. 1M groups, four writers, every worker terminated.
psql(q{
CREATE TABLE big (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL);
CREATE INDEX ON big (ts);
INSERT INTO big SELECT now() - interval '1 day' + (i / 1000) * interval '1 minute', i % 1000, 1
  FROM generate_series(0, 999999) i;
SELECT flowpg.create_flow('bigflow', 'bigflow',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
      FROM big GROUP BY 1, 2$$, mode => 'streaming');
-- about 4 x 4000 rows/s, as the benchmark's freshness load
CREATE PROCEDURE load_big(seconds float8) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
	WHILE clock_timestamp() - t0 < seconds * interval '1 s' LOOP
		INSERT INTO big SELECT clock_timestamp(), (random() * 999)::int, 1 FROM generate_series(1, 10);
		COMMIT;
		PERFORM pg_sleep(0.002);
	END LOOP;
END $$;
});
ok(poll_until(q{SELECT flowpg.flush_flow('bigflow') >= 0 AND state_groups >= 1000000
                  FROM flowpg.flow_stats WHERE flow_name = 'bigflow'}, 't', 180),
	'bigflow holds 1M groups in shared memory');
my $refills = psql(q{SELECT state_refills FROM flowpg.flow_stats WHERE flow_name = 'bigflow'});
my $repairs = psql(q{SELECT state_repairs FROM flowpg.flow_stats WHERE flow_name = 'bigflow'});
my @loads;
for (1 .. 4)
{
	my ($out, $err) = ('', '');
	push @loads, IPC::Run::start([ 'psql', '-X', '-d', $node->connstr('flows'), '-c', 'CALL load_big(10)' ],
		'>', \$out, '2>', \$err);
}
sleep(3);
my $terminated = psql(q{SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                         WHERE backend_type = 'flowpg worker'});
cmp_ok($terminated, '>', 0, "terminated all $terminated flowpg workers under the load");
ok(poll_until(q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'flowpg worker'
                  AND datname = 'flows'}, 't', 20),
	'a worker is back');
$t0 = time();
psql(q{INSERT INTO big VALUES (clock_timestamp(), 5000, 1)});
ok(poll_until(q{SELECT count(*) FROM bigflow WHERE device = 5000}, '1', 10), 'the new row reached the sink');
my $back = time() - $t0;
cmp_ok($back, '<=', 1.0, sprintf('within %.2f s of the workers coming back', $back));
$_->finish for @loads;
is(psql(q{SELECT state_refills FROM flowpg.flow_stats WHERE flow_name = 'bigflow'}), $refills,
	'no refill from the source: the state stayed in shared memory');
is(psql(q{SELECT flowpg.flush_flow('bigflow') >= 0 AND flow_mismatches('bigflow') = 0}), 't',
	'bigflow is exact');
note(psql(q{SELECT format('bigflow: %s groups, %s bytes of state, %s repairs',
                          state_groups, state_bytes, state_repairs)
              FROM flowpg.flow_stats WHERE flow_name = 'bigflow'})
	. " ($repairs before the workers were terminated)");

$node->stop;
done_testing();
