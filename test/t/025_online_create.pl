# flowpg: create_flow over a large table while writers write (online
# backfill, backfill.c).
#
#   - create_flow of a batching and a streaming flow over 2M rows returns at
#     once; the flows show "backfilling" with progress in flow_backfills;
#   - writers inserting, updating and deleting all along, one of them with
#     lock_timeout = 1s, never fail and never wait for the backfill;
#   - after the backfill and a flush every sink equals its query: rows
#     committed before, during and after the backfill's snapshots are each
#     counted once;
#   - the same for create_flow with or_replace and refresh_flow over the
#     whole flow (refresh_flow of a streaming flow reloads its state, a
#     whole read of the source that a test need not wait for);
#   - flush_flow during a backfill completes it.
# The writers' worst latency is printed (BENCHMARKS.md records the
# benchmark's figures; a test asserts no timing).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

my $node = FlowpgTest::node('online_create', "fsync = off\nflowpg.workers_per_database = 2\n");
sub psql { return $node->safe_psql('flows', $_[0]); }
sub poll_until { return FlowpgTest::poll_until($node, 'flows', @_); }

$node->safe_psql('postgres', 'CREATE DATABASE flows');
psql($FlowpgTest::mismatches_function);
psql(q{
CREATE EXTENSION flowpg;
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value int NOT NULL);
INSERT INTO metrics
  SELECT '2024-01-01'::timestamptz + (i % 1000000) * interval '1 second', i % 50, i % 1000
    FROM generate_series(1, 2000000) i;
-- a time index, as tables of this size have: the backfill goes in pieces
CREATE INDEX ON metrics USING brin (ts);
ANALYZE metrics;
CREATE TABLE writer_done (writer int, worst interval, rows int);
-- a writer: one row a transaction, its slowest INSERT + COMMIT recorded;
-- rows land in old and new windows, some are updated or deleted
CREATE PROCEDURE writer(w int, n int) LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz;
	worst interval := interval '0';
BEGIN
	FOR i IN 1 .. n LOOP
		t0 := clock_timestamp();
		INSERT INTO metrics VALUES ('2024-01-01'::timestamptz + ((i * 7919 + w) % 1100000) * interval '1 second',
									i % 50, i);
		IF i % 10 = 0 THEN
			UPDATE metrics SET value = value + 1
			 WHERE ts = '2024-01-01'::timestamptz + ((i * 7919 + w) % 1100000) * interval '1 second';
		END IF;
		IF i % 25 = 0 THEN
			DELETE FROM metrics
			 WHERE ts = '2024-01-01'::timestamptz + ((i * 104729 + w) % 1000000) * interval '1 second'
			   AND device = (i * 104729 + w) % 1000000 % 50;
		END IF;
		COMMIT;
		worst := greatest(worst, clock_timestamp() - t0);
		PERFORM pg_sleep(0.002);
	END LOOP;
	INSERT INTO writer_done VALUES (w, worst, n);
END $$;
});

# writers: all along the creation, the backfill and after
sub start_writer
{
	my ($w, $n, $lock_timeout) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('flows'),
		  '-c', "SET lock_timeout = '" . ($lock_timeout // '0') . "'", '-c', "CALL writer($w, $n)" ],
		'>', \$out, '2>', \$err);
	return { h => $h, out => \$out, err => \$err };
}
my @writers = (start_writer(1, 1500, '1s'), start_writer(2, 1500, undef));
usleep(500_000);

my $t0 = time();
psql(q{
SELECT flowpg.create_flow('b_min', 'b_min',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total FROM metrics GROUP BY 1, 2$$,
  mode => 'batching');
SELECT flowpg.create_flow('s_min', 's_min',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total, max(value) AS top
      FROM metrics GROUP BY 1, 2$$,
  mode => 'streaming');
});
my $create_secs = time() - $t0;
diag(sprintf('create_flow of both flows over 2M rows returned in %.2f s', $create_secs));
is(psql(q{SELECT string_agg(state, ',' ORDER BY flow_name) FROM flowpg.flows}),
	'backfilling,backfilling', 'both flows are backfilling once created');
like(psql(q{SELECT state_reason FROM flowpg.flows WHERE flow_name = 'b_min'}),
	qr/pieces done/, 'the reason says how far');
ok(poll_until(q{SELECT count(*) > 0 FROM flowpg.flow_backfills WHERE pieces_done > 0 AND pieces_total > 1}, 't', 60),
	'flow_backfills shows the progress of the pieces');
ok(poll_until(q{SELECT count(*) FROM flowpg.flows WHERE state = 'active'}, '2', 120),
	'the worker completes both backfills');
my $backfill_secs = time() - $t0;
diag(sprintf('both backfills complete after %.1f s', $backfill_secs));

# a replacement and a whole refresh while the writers still write
psql(q{
SELECT flowpg.create_flow('b_min', 'b_min',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total FROM metrics
     WHERE value % 2 = 0 GROUP BY 1, 2$$,
  mode => 'batching', or_replace => true);
});
is(psql(q{SELECT state FROM flowpg.flows WHERE flow_name = 'b_min'}), 'backfilling',
	'the replaced flow backfills again');
ok(poll_until(q{SELECT count(*) FROM flowpg.flows WHERE state = 'active'}, '2', 120),
	'the replacement is backfilled too');
is(psql(q{SELECT flowpg.refresh_flow('b_min') > 0}), 't', 'refresh_flow over the whole flow, writers writing');

foreach my $w (@writers)
{
	$w->{h}->finish;
	is(${ $w->{err} }, '', 'a writer never failed (lock_timeout = 1s for one of them)');
}
my $worst = psql(q{SELECT round(extract(epoch FROM max(worst)) * 1000) FROM writer_done});
is(psql(q{SELECT count(*) FROM writer_done}), '2', 'both writers finished');
diag("writers' worst INSERT+COMMIT during the creations and backfills: $worst ms");

is(psql(q{SELECT flowpg.flush_flow('b_min') >= 0 AND flowpg.flush_flow('s_min') >= 0}), 't', 'flushed');
is(psql(q{SELECT flow_mismatches('b_min')}), '0', 'the replaced batching flow is exact');
is(psql(q{SELECT flow_mismatches('s_min')}), '0', 'the streaming flow is exact');

# flush_flow during a backfill completes it, in the caller
psql(q{
SELECT flowpg.create_flow('b_hour', 'b_hour',
  $$SELECT date_trunc('hour', ts) AS hour, count(*) AS n FROM metrics GROUP BY 1$$, mode => 'batching');
});
is(psql(q{SELECT flowpg.flush_flow('b_hour') > 0; SELECT state FROM flowpg.flows WHERE flow_name = 'b_hour';
          SELECT flow_mismatches('b_hour')}),
	"t\nactive\n0", 'flush_flow during the backfill completes it, exact');
# and backfill => false keeps its meaning: nothing from before
psql(q{
SELECT flowpg.create_flow('b_new', 'b_new',
  $$SELECT date_trunc('hour', ts) AS hour, count(*) AS n FROM metrics GROUP BY 1$$,
  mode => 'batching', backfill => false);
INSERT INTO metrics VALUES ('2030-01-01', 1, 1);
});
is(psql(q{SET timezone = 'UTC'; SELECT state FROM flowpg.flows WHERE flow_name = 'b_new'; SELECT flowpg.flush_flow('b_new') >= 0;
          SELECT string_agg(hour || '=' || n, ',') FROM b_new}),
	"active\nt\n2030-01-01 00:00:00+00=1", 'backfill => false: no backfill, new rows only');

$node->stop;
done_testing();
