# flowpg: docs/reference.md describes every object of the extension.
#
# Every SQL function and aggregate of schema flowpg (but the internal ones,
# whose names begin with "_") has a "### " heading naming it
# (`flowpg.name`); every view has its own heading, under which each of its
# columns is named (`column`); every table is named in the Tables section,
# every setting has a row in the Settings table.  And the other way round:
# every `flowpg.name` a heading names exists.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use FlowpgTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $reference = "$FindBin::RealBin/../../docs/reference.md";
open(my $fh, '<', $reference) or die "cannot read $reference: $!";
my @lines = <$fh>;
close($fh);

# The reference cut into sections: heading => its text.
my (%section, @headings, $current, %part);
my $part = '';
my $in_code = 0;
for my $line (@lines)
{
	$in_code = !$in_code if $line =~ /^```/;
	next if $in_code;
	if ($line =~ /^## (.*)$/) { $part = $1; $current = undef; }
	if ($line =~ /^### (.*)$/)
	{
		$current = $1;
		push @headings, $current;
		$section{$current} = '';
		next;
	}
	$section{$current} .= $line if defined $current;
	$part{$part} .= $line;
}

my $node = FlowpgTest::node('reference');
$node->safe_psql('postgres', 'CREATE EXTENSION flowpg');
sub rows { return split /\n/, $node->safe_psql('postgres', $_[0]); }

# headings naming an object: "### `flowpg.a` / `flowpg.b`" or a title with names
sub heading_of
{
	my ($name) = @_;
	my @found = grep { /`flowpg\.\Q$name\E[`(]/ } @headings;
	return $found[0];
}

my @functions = rows(q{
SELECT DISTINCT p.proname FROM pg_proc p
 WHERE p.pronamespace = 'flowpg'::regnamespace AND p.proname !~ '^_'
 ORDER BY 1});
ok(scalar(@functions) >= 20, 'the extension has its functions (' . scalar(@functions) . ')');
for my $f (@functions)
{
	ok(defined heading_of($f), "function flowpg.$f has a heading in the reference");
}

my @views = rows(q{
SELECT c.relname FROM pg_class c
 WHERE c.relnamespace = 'flowpg'::regnamespace AND c.relkind = 'v' ORDER BY 1});
ok(scalar(@views) >= 10, 'the extension has its views (' . scalar(@views) . ')');
for my $v (@views)
{
	my $heading = heading_of($v);
	ok(defined $heading, "view flowpg.$v has a heading in the reference");
	next unless defined $heading;
	for my $column (rows(qq{
SELECT attname FROM pg_attribute
 WHERE attrelid = 'flowpg.$v'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum}))
	{
		# `column`, or a name in a backquoted list: `a, b,\n c`
		ok($section{$heading} =~ /(?<![\w.])\Q$column\E(?=[`,])/,
		   "column $column of flowpg.$v is described under its heading");
	}
}

for my $t (rows(q{
SELECT c.relname FROM pg_class c
 WHERE c.relnamespace = 'flowpg'::regnamespace AND c.relkind = 'r' ORDER BY 1}))
{
	ok(($part{'Tables'} // '') =~ /`flowpg\.\Q$t\E`/, "table flowpg.$t is in the Tables section");
}

my @settings = rows(q{SELECT name FROM pg_settings WHERE name LIKE 'flowpg.%' ORDER BY 1});
ok(scalar(@settings) >= 10, 'the extension has its settings (' . scalar(@settings) . ')');
for my $s (@settings)
{
	ok(($part{'Settings'} // '') =~ /^\| `\Q$s\E` \|/m, "setting $s has a row in the Settings table");
}

# nothing described that is not there
my %exists = map { $_ => 1 } @functions, @views;
for my $heading (@headings)
{
	while ($heading =~ /`flowpg\.(\w+)/g)
	{
		ok($exists{$1}, "flowpg.$1, named by heading '$heading', exists");
	}
}

$node->stop;
done_testing();
