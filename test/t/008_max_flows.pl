# flowpg.max_flows is enforced: create_flow beyond it fails cleanly (53400)
# and leaves nothing behind; replacing an existing flow at the limit works.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = FlowpgTest::node('max_flows', "flowpg.max_flows = 2\n");
$node->safe_psql('postgres', q{
CREATE EXTENSION flowpg;
CREATE TABLE m (ts timestamptz, v int);
INSERT INTO m SELECT '2024-01-01'::timestamptz + i * interval '1 minute', i FROM generate_series(1, 100) i;
SELECT flowpg.create_flow('f1', 's1', $$SELECT date_trunc('hour', ts) AS h, count(*) AS n FROM m GROUP BY 1$$);
SELECT flowpg.create_flow('f2', 's2', $$SELECT date_trunc('day', ts) AS d, sum(v) AS t FROM m GROUP BY 1$$);
});

my ($rc, $out, $err) = $node->psql('postgres',
	q{SELECT flowpg.create_flow('f3', 's3', $$SELECT date_trunc('hour', ts) AS h, max(v) AS x FROM m GROUP BY 1$$)},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($rc, 0, 'a third flow is refused');
like($err, qr/53400: too many flows/, 'with SQLSTATE 53400 and a clear message');
like($err, qr/raise flowpg\.max_flows/, 'and a hint');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM flowpg.flows WHERE flow_name = 'f3' UNION ALL SELECT count(*) FROM pg_class WHERE relname = 's3'"),
	"0\n0", 'nothing left behind');

is($node->safe_psql('postgres',
	q{SELECT flowpg.create_flow('f2', 's2', $$SELECT date_trunc('day', ts) AS d, sum(v) AS t FROM m WHERE v > 10 GROUP BY 1$$, or_replace => true) > 0}),
	't', 'replacing a flow at the limit works');

$node->safe_psql('postgres', "SELECT flowpg.drop_flow('f1')");
is($node->safe_psql('postgres',
	q{SELECT flowpg.create_flow('f3', 's3', $$SELECT date_trunc('hour', ts) AS h, max(v) AS x FROM m GROUP BY 1$$) > 0}),
	't', 'after a drop there is room again');

$node->stop;
done_testing();
