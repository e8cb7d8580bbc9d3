# flowpg: sinks on a physical (streaming) replica, and a promoted replica.
#
# Sinks are ordinary tables, so a hot standby has them as of the WAL it
# replayed: dashboards can read them there.  No worker runs on a standby
# and nothing can be flushed there (an error at once, not a wait); the
# views can be read.  Once promoted, the standby runs the flows itself:
# the catalog and dirty log came with the WAL, streaming state (shared
# memory) did not, and is loaded from the source, so its sinks stay exact.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $conf = q{
shared_preload_libraries = 'flowpg'
flowpg.min_refresh_interval = '200ms'
lc_messages = 'C'
};
my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', $conf);
$primary->start;
$primary->safe_psql('postgres', 'CREATE DATABASE flows');
$primary->safe_psql('flows', q{
CREATE EXTENSION flowpg;
CREATE TABLE metrics (ts timestamptz NOT NULL, device int NOT NULL, value float8);
INSERT INTO metrics SELECT '2024-01-01'::timestamptz + i * interval '1 second', i % 10, i
  FROM generate_series(1, 20000) i;
SELECT flowpg.create_flow('s', 's_out',
  $$SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
      FROM metrics GROUP BY 1, 2$$, mode => 'streaming');
SELECT flowpg.create_flow('b', 'b_out',
  $$SELECT date_trunc('hour', ts) AS hour,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS median
      FROM metrics GROUP BY 1$$);
SELECT flowpg.flush_flow('s'), flowpg.flush_flow('b');
});

$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

# rows written on the primary after the backup, deleted and updated ones too
$primary->safe_psql('flows', q{
INSERT INTO metrics SELECT '2024-01-02'::timestamptz + i * interval '1 second', i % 10, i
  FROM generate_series(1, 5000) i;
DELETE FROM metrics WHERE device = 3 AND ts < '2024-01-01 02:00';
UPDATE metrics SET value = value + 1 WHERE device = 4;
SELECT flowpg.flush_flow('s'), flowpg.flush_flow('b');
});
$primary->wait_for_catchup($standby, 'replay');

# the standby's sinks equal the flows' queries run on the standby
my %check = (
	s => q{SELECT device, date_trunc('minute', ts) AS minute, count(*) AS n, sum(value) AS total
	         FROM metrics GROUP BY 1, 2},
	b => q{SELECT date_trunc('hour', ts) AS hour,
	              percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS median
	         FROM metrics GROUP BY 1});
my %columns = (s => 'device, minute, n, total', b => 'hour, median');
for my $flow (sort keys %check)
{
	my $mismatches = $standby->safe_psql('flows', qq{
SELECT count(*) FROM ((SELECT $columns{$flow} FROM ${flow}_out EXCEPT ALL $check{$flow})
           UNION ALL ($check{$flow} EXCEPT ALL SELECT $columns{$flow} FROM ${flow}_out)) d});
	is($mismatches, '0', "the standby's sink of flow $flow equals its query on the standby");
}
ok($standby->safe_psql('flows', 'SELECT count(*) FROM s_out') > 0, 'the standby has sink rows');

# the views can be read on the standby; flushing is refused at once
is($standby->safe_psql('flows', q{SELECT string_agg(flow_name || ' ' || mode, ', ' ORDER BY flow_name) FROM flowpg.flows}),
   'b batching, s streaming', 'flowpg.flows can be read on the standby');
$standby->safe_psql('flows', 'SELECT count(*) FROM flowpg.flow_stats');
# a streaming flush is answered by the session itself there (no worker
# runs), which cannot write; a batching flush has nothing to do while the
# replayed dirty log is empty, and would fail the same way otherwise
my ($ret, $out, $err) = $standby->psql('flows', q{SELECT flowpg.flush_flow('s')}, timeout => 60);
isnt($ret, 0, "flush_flow of a streaming flow on the standby is an error, at once");
like($err, qr/read-only/, "... saying why: $err");
($ret, $out, $err) = $standby->psql('flows', q{SELECT flowpg.flush_flow('b')}, timeout => 60);
ok(($ret == 0 && $out eq '0') || $err =~ /read-only/,
   "flush_flow of a batching flow on the standby writes nothing: " . ($err || $out));

# promoted, the standby runs the flows; they stay exact
$standby->promote;
$standby->poll_query_until('flows', 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby was not promoted';
$standby->safe_psql('flows', q{
INSERT INTO metrics SELECT '2024-01-03'::timestamptz + i * interval '1 second', i % 10, i
  FROM generate_series(1, 3000) i;
DELETE FROM metrics WHERE device = 5;
SELECT flowpg.flush_flow('s'), flowpg.flush_flow('b');
});
for my $flow ('s', 'b')
{
	is($standby->safe_psql('flows', qq{SELECT flowpg.verify_flow('$flow')}), '0',
	   "flow $flow is exact on the promoted standby");
}
ok(FlowpgTest::poll_until($standby, 'flows',
	q{SELECT state FROM flowpg.flows WHERE flow_name = 's'}, 'active', 60),
   'the streaming flow is active on the promoted standby');

$standby->stop;
$primary->stop;
done_testing();
