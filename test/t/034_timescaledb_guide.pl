# flowpg: the examples of docs/coming-from-timescaledb.md, run as written.
#
# Every ```sql block of the guide runs, in order, in one database (psql,
# stopping at the first error); a block whose answer is a row of booleans
# (the guide's checks: sees_my_row, history_kept, ...) must answer true.
# Then every flow the guide created is exact: its sink equals its query
# (verify_flow: from the horizon on for a flow with expire_after).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $guide = "$FindBin::RealBin/../../docs/coming-from-timescaledb.md";
open(my $fh, '<', $guide) or die "cannot read $guide: $!";
my @blocks;
my $current;
while (my $line = <$fh>)
{
	if (!defined $current && $line =~ /^```sql\s*$/)
	{
		$current = '';
	}
	elsif (defined $current && $line =~ /^```\s*$/)
	{
		push @blocks, $current;
		undef $current;
	}
	elsif (defined $current)
	{
		$current .= $line;
	}
}
close($fh);
cmp_ok(scalar(@blocks), '>=', 6, scalar(@blocks) . ' SQL examples in the guide');

my $node = FlowpgTest::node('guide', qq{
timezone = 'UTC'
});
$node->safe_psql('postgres', 'CREATE DATABASE guide');
$node->safe_psql('guide', 'CREATE EXTENSION flowpg');
$node->safe_psql('guide', $FlowpgTest::mismatches_function);

my $n = 0;
for my $sql (@blocks)
{
	$n++;
	my ($first) = $sql =~ /^(?:--[^\n]*\n)*\s*([^\n]*)/;
	my ($rc, $out, $err) = $node->psql('guide', $sql, extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
	is($rc, 0, "example $n runs: $first") or diag($err);
	my @false = grep { /^[tf](\|[tf])*$/ && /f/ } split(/\n/, $out);
	is(scalar(@false), 0, "example $n: its checks hold") or diag($out);
}

my @flows = split(/\n/, $node->safe_psql('guide', 'SELECT flow_name FROM flowpg.flows ORDER BY flow_id'));
cmp_ok(scalar(@flows), '>=', 4, 'the guide created ' . scalar(@flows) . ' flows');
for my $flow (@flows)
{
	is($node->safe_psql('guide', qq{
SET client_min_messages = warning;
SELECT flowpg.flush_flow('$flow') >= 0 AND flowpg.verify_flow('$flow') = 0}), 't', "$flow is exact");
}

$node->stop;
done_testing();
