# flowpg: what the databases of a server share, no tenant can take from the
# others unseen.
#
# Streaming flows of every database share 4 * flowpg.max_flows slots in
# shared memory.  With flowpg.max_flows = 2 (8 slots) and five databases of
# two streaming flows each, the ninth and tenth flows must be refused at
# creation (53400, naming the limit), never accepted and then left
# "failed: no shared memory left"; every flow created works.  A dropped
# flow's slot serves a new one.  flowpg.max_streaming_flows_per_role bounds
# what one role holds across the databases.  A database whose flowpg
# objects wait for ALTER EXTENSION UPDATE but hold no flow gives its worker
# up.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = FlowpgTest::node('shared_slots', q{
flowpg.max_flows = 2
flowpg.flush_interval = '100ms'
max_worker_processes = 20
});

my $query = q{SELECT date_trunc('minute', ts) AS minute, device, count(*) AS n, sum(v) AS total
                FROM m GROUP BY 1, 2};
for my $db (1 .. 5)
{
	$node->safe_psql('postgres', "CREATE DATABASE tenant_$db");
	$node->safe_psql("tenant_$db", qq{
CREATE EXTENSION flowpg;
CREATE TABLE m (ts timestamptz NOT NULL, device int, v int);
CREATE ROLE tenant_${db}_owner LOGIN;
GRANT CREATE ON SCHEMA public TO tenant_${db}_owner;
ALTER TABLE m OWNER TO tenant_${db}_owner;
$FlowpgTest::mismatches_function
});
}

# Five databases, two streaming flows each: eight fit, two are refused.
my @created;
my @refused;
for my $db (1 .. 5)
{
	for my $f (1 .. 2)
	{
		my ($rc, $out, $err) = $node->psql("tenant_$db",
			qq{SELECT flowpg.create_flow('f$f', 's$f', \$\$$query\$\$, mode => 'streaming')},
			extra_params => [ '-v', 'VERBOSITY=verbose' ]);
		if ($rc == 0) { push @created, "tenant_$db.f$f"; }
		else { push @refused, [ "tenant_$db", "f$f", $err ]; }
	}
}
is(scalar(@created), 8, 'eight streaming flows get the eight slots');
is(scalar(@refused), 2, 'the ninth and tenth are refused at creation');
like($refused[0][2], qr/53400: no room for another streaming flow in this server/,
	'with SQLSTATE 53400 and a clear message');
like($refused[0][2], qr/shared by every database/, 'the detail says the slots are shared');
like($refused[0][2], qr/mode => 'batching'/, 'the hint gives the ways out');
is($node->safe_psql($refused[0][0],
	"SELECT count(*) FROM flowpg.flows UNION ALL SELECT count(*) FROM pg_class WHERE relname = '$refused[0][1]'"),
	"0\n0", 'a refused flow leaves nothing behind');
is($node->safe_psql($refused[1][0],
	qq{SELECT flowpg.create_flow('fb', 'sb', \$\$$query\$\$, mode => 'batching') > 0}),
	't', 'a batching flow needs no slot: it is created there');

# Every flow created works: writes, flush, exact.
for my $db (1 .. 5)
{
	$node->safe_psql("tenant_$db", q{
INSERT INTO m SELECT '2024-01-01'::timestamptz + i * interval '7 seconds', i % 4, i
  FROM generate_series(1, 500) i;
});
}
my $exact = 0;
my $states = '';
for my $name (@created)
{
	my ($db, $flow) = split /\./, $name;
	$exact += $node->safe_psql($db,
		"SELECT flowpg.flush_flow('$flow') >= 0 AND flow_mismatches('$flow') = 0") eq 't';
	$states .= $node->safe_psql($db, "SELECT state FROM flowpg.flows WHERE flow_name = '$flow'") . ' ';
}
is($exact, 8, 'all eight streaming flows are exact after flush_flow');
unlike($states, qr/failed/, 'none of them failed');

# A dropped flow's slot serves a new flow, in another database (once the
# dropping database's worker let it go).
$node->safe_psql('tenant_1', "SELECT flowpg.drop_flow('f1')");
ok(FlowpgTest::poll_until($node, $refused[0][0],
	qq{SELECT flowpg.create_flow('$refused[0][1]', '$refused[0][1]', \$\$$query\$\$, mode => 'streaming') > 0},
	't', 30), 'after a drop, the refused flow gets the freed slot');

# A role's streaming flows count in every database (superusers' do not):
# flowpg.max_streaming_flows_per_role defaults to flowpg.max_flows (2).
for my $db (1 .. 5)
{
	$node->safe_psql("tenant_$db",
		"SELECT flowpg.drop_flow(flow_name) FROM flowpg.flows");
}
$node->safe_psql('postgres', 'CREATE ROLE greedy LOGIN');
for my $db (1 .. 5)
{
	$node->safe_psql("tenant_$db", qq{
GRANT CREATE ON SCHEMA public TO greedy;
GRANT SELECT, TRIGGER ON m TO greedy;
});
}
# (the dropped flows' slots are let go by their databases' workers)
ok(FlowpgTest::poll_until($node, 'postgres', q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type = 'flowpg worker'}, '0', 60), 'the databases without flows let their workers go');
for my $db (1 .. 2)
{
	is($node->safe_psql("tenant_$db", qq{SET ROLE greedy;
SELECT flowpg.create_flow('g', 'gs', \$\$$query\$\$, mode => 'streaming') > 0}),
		't', "role greedy gets a streaming flow in database tenant_$db");
}
my ($rc, $out, $err) = $node->psql('tenant_3', qq{SET ROLE greedy;
SELECT flowpg.create_flow('g', 'gs', \$\$$query\$\$, mode => 'streaming')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/53400: too many streaming flows for role greedy/,
	'its third, in a third database, is refused');
like($err, qr/owns 2 streaming flows in the databases of this server/, 'counting every database');
is($node->safe_psql('tenant_3', qq{SET ROLE tenant_3_owner;
SELECT flowpg.create_flow('t', 'ts3', \$\$$query\$\$, mode => 'streaming') > 0}),
	't', 'another role still gets its flow there');
$node->append_conf('postgresql.conf', 'flowpg.max_streaming_flows_per_role = 3');
$node->reload;
is($node->safe_psql('tenant_3', qq{SET ROLE greedy;
SELECT flowpg.create_flow('g', 'gs', \$\$$query\$\$, mode => 'streaming') > 0}),
	't', 'raised to 3, the third is created');

# The slots of flows that survive a restart are taken again by their
# databases' workers: counted before any writer comes.
$node->restart;
ok(FlowpgTest::poll_until($node, 'postgres', q{SELECT count(DISTINCT datname) FROM pg_stat_activity
	WHERE backend_type = 'flowpg worker' AND datname IN ('tenant_1', 'tenant_2', 'tenant_3')}, '3', 30),
	'after a restart, the databases with flows have their workers');
sleep(2);    # their first pass over their flows
($rc, $out, $err) = $node->psql('tenant_4', qq{SET ROLE greedy;
SELECT flowpg.create_flow('g', 'gs', \$\$$query\$\$, mode => 'streaming')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/too many streaming flows for role greedy/,
	'after a restart, its three flows still count');

# A database waiting for ALTER EXTENSION UPDATE with no flow in it lets
# its worker go (simulated: the recorded version set to the previous one).
my $workers_in = sub {
	qq{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'flowpg worker' AND datname = '$_[0]'};
};
$node->safe_psql('tenant_5', "UPDATE pg_extension SET extversion = '0.2' WHERE extname = 'flowpg'");
$node->restart;
ok(FlowpgTest::poll_until($node, 'postgres', $workers_in->('tenant_3'), '1', 30),
	'a database with flows has its worker');
sleep(3);    # the launcher started a worker for each database; tenant_5's leaves
is($node->safe_psql('postgres', $workers_in->('tenant_5')), '0',
	'an outdated database without flows keeps no worker');
$node->safe_psql('tenant_5', "UPDATE pg_extension SET extversion = '0.3' WHERE extname = 'flowpg'");

$node->stop;
done_testing();
