# flowpg: the examples of the documentation, run as written.
#
# docs/coming-from-timescaledb.md (all of it) and README.md's five-minute
# tour: every ```sql block runs, in order, in a database of its own for
# each document (psql, stopping at the first error); a block whose answer
# is a row of booleans (the guide's checks: sees_my_row, history_kept, ...)
# must answer true.  Then every flow a document created is exact: its sink
# equals its query (verify_flow: from the horizon on for a flow with
# expire_after; float8 values within the document's tolerance).
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# The ```sql blocks of a document, or of its section (a "## " heading) only.
sub sql_blocks
{
	my ($path, $section) = @_;
	open(my $fh, '<', $path) or die "cannot read $path: $!";
	my (@blocks, $current);
	my $inside = !defined $section;
	while (my $line = <$fh>)
	{
		if (defined $section && !defined $current && $line =~ /^## (.*)$/)
		{
			$inside = $1 eq $section;
			next;
		}
		next unless $inside;
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
	return @blocks;
}

my $node = FlowpgTest::node('examples', qq{
timezone = 'UTC'
});

my @documents = (
	# database, file, section, at least that many blocks and flows, and the
	# verify_flow tolerance: the tour averages float8, which streaming merges
	# in another order than the query (the tour says so)
	[ 'guide', 'docs/coming-from-timescaledb.md', undef, 6, 4, 0 ],
	[ 'tour', 'README.md', 'A five-minute tour', 6, 4, 1e-12 ]);
for my $doc (@documents)
{
	my ($db, $file, $section, $min_blocks, $min_flows, $tolerance) = @$doc;
	my @blocks = sql_blocks("$FindBin::RealBin/../../$file", $section);
	cmp_ok(scalar(@blocks), '>=', $min_blocks, scalar(@blocks) . " SQL examples in $file");

	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION flowpg');
	$node->safe_psql($db, $FlowpgTest::mismatches_function);

	my $n = 0;
	for my $sql (@blocks)
	{
		$n++;
		my ($first) = $sql =~ /^(?:--[^\n]*\n)*\s*([^\n]*)/;
		my ($rc, $out, $err) = $node->psql($db, $sql, extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
		is($rc, 0, "$file, example $n runs: $first") or diag($err);
		my @false = grep { /^[tf](\|[tf])*$/ && /f/ } split(/\n/, $out);
		is(scalar(@false), 0, "$file, example $n: its checks hold") or diag($out);
	}

	my @flows = split(/\n/, $node->safe_psql($db, 'SELECT flow_name FROM flowpg.flows ORDER BY flow_id'));
	cmp_ok(scalar(@flows), '>=', $min_flows, "$file created " . scalar(@flows) . ' flows');
	for my $flow (@flows)
	{
		is($node->safe_psql($db, qq{
SET client_min_messages = warning;
SELECT flowpg.flush_flow('$flow') >= 0 AND flowpg.verify_flow('$flow', $tolerance) = 0}), 't', "$file: $flow is exact");
	}
}

$node->stop;
done_testing();
