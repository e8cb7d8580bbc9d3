/*
 * flowload: load generator and exactness verifier for flowpg.
 *
 * Loads a source table "(ts timestamptz, device int, value float8)" from N
 * concurrent clients (one thread and one libpq connection each) with a chosen
 * mix of transactions (COPY, multi-row INSERT or one INSERT per row; rolled
 * back transactions, rolled back savepoints, UPDATEs, DELETEs, late rows, a
 * global rate limit), reports throughput and latency, and verifies flows:
 * after flowpg.flush_flow(flow) the flow's sink must equal its query run on
 * the sources (EXCEPT ALL both ways, floats compared with a tolerance).
 *
 * Exit status: 0 success; 1 bad arguments, connection or SQL error;
 * 2 a verification failed (a flow's sink differs from its query, or
 * --expect-rows does not match).
 *
 * Build: make -C test/tools   (gcc, libpq, pthreads).  See --help.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define EXIT_ERROR 1
#define EXIT_MISMATCH 2

#define FLOAT4OID 700
#define FLOAT8OID 701

/* Rows kept per side of a flow's difference for the tolerance pass. */
#define PAIRING_CAP 200000

static const char *progname = "flowload";

/* ------------------------------------------------------------------------
 * Options
 * ------------------------------------------------------------------------ */

typedef enum { METHOD_COPY, METHOD_INSERT, METHOD_SINGLE } Method;
static const char *const method_names[] = {"copy", "insert", "single"};

static struct
{
	const char *conninfo;
	const char *table;
	int			clients;
	int			batch;
	Method		method;
	long long	rows;
	bool		rows_set;
	double		duration;		/* seconds; 0 = none */
	double		rate;			/* rows/s; 0 = unlimited */
	double		abort_fraction;
	double		savepoint_fraction;
	double		update_fraction;
	double		delete_fraction;
	double		late_fraction;
	int			devices;
	int64_t		start_us;		/* microseconds since 1970-01-01 00:00:00+00 */
	double		span;			/* seconds */
	uint64_t	seed;
	bool		json;
	char	   *verify;			/* comma-separated flow names */
	double		tolerance;
	double		abs_tolerance;
	long long	expect_rows;
	bool		expect_rows_set;
	bool		create;
	int			show;
} opt = {
	.conninfo = NULL,
	.table = "metrics",
	.clients = 1,
	.batch = 100,
	.method = METHOD_COPY,
	.devices = 1000,
	.start_us = INT64_C(1704067200) * 1000000,	/* 2024-01-01 00:00:00+00 */
	.span = 86400.0,
	.seed = 1,
	.tolerance = 1e-9,
	.show = 5,
};

static void
usage(void)
{
	printf(
"%s: load generator and exactness verifier for flowpg\n"
"\n"
"Usage: %s [OPTION]...\n"
"\n"
"Loads TABLE (ts timestamptz, device int, value float8) from concurrent clients,\n"
"reports throughput and latency, then optionally verifies flows: after\n"
"flowpg.flush_flow(flow), the flow's sink must equal its query run on the\n"
"sources (EXCEPT ALL both ways, floats within a relative tolerance).\n"
"\n"
"Connection and table:\n"
"  -d, --dbname=CONNINFO        libpq connection string or URI (default: libpq's\n"
"                               environment: PGHOST, PGPORT, PGDATABASE, ...)\n"
"  -t, --table=NAME             source table, may be schema-qualified (default: metrics)\n"
"      --create                 create the table when it does not exist\n"
"\n"
"Load (runs when --rows N > 0 or --duration is given):\n"
"  -c, --clients=N              concurrent clients, one connection each (default: 1)\n"
"  -b, --batch=N                rows per transaction (default: 100)\n"
"  -m, --method=METHOD          copy (one COPY per transaction), insert (one\n"
"                               multi-row INSERT), single (one INSERT per row)\n"
"                               (default: copy)\n"
"  -n, --rows=N                 rows to commit in total, over all clients; 0: no\n"
"                               row limit with --duration, else no load\n"
"  -T, --duration=SECONDS       stop after this time (with --rows: whichever first)\n"
"  -R, --rate=ROWS_PER_SEC      global rate limit of written rows (default: none)\n"
"      --abort-fraction=F       fraction of transactions that ROLLBACK (default: 0)\n"
"      --savepoint-fraction=F   fraction of insert transactions that also insert\n"
"                               an extra batch in a SAVEPOINT rolled back (default: 0)\n"
"      --update-fraction=F      fraction of transactions that instead UPDATE a few\n"
"                               random recent rows (value, and half the time ts\n"
"                               moved by up to 2 minutes) (default: 0)\n"
"      --delete-fraction=F      fraction of transactions that instead DELETE a few\n"
"                               random recent rows (default: 0)\n"
"      --late-fraction=F        fraction of rows with a timestamp uniformly random\n"
"                               in the time domain instead of in order (default: 0)\n"
"      --devices=N              device ids 1..N, uniformly random (default: 1000)\n"
"      --start=TIMESTAMP        start of the time domain, 'YYYY-MM-DD[ HH:MM[:SS[.f]]]'\n"
"                               with an optional zone (Z, +HH, +HH:MM; default\n"
"                               UTC) or '@EPOCH' (default: 2024-01-01 00:00:00+00)\n"
"      --span=SECONDS           length of the time domain (default: 86400, one day);\n"
"                               in-order rows advance each client's clock through it\n"
"      --seed=N                 seed of every random choice and value (default: 1)\n"
"\n"
"Verification (after the load, if any):\n"
"  -V, --verify=FLOW[,FLOW...]  flush each flow and compare its sink with its query\n"
"      --tolerance=F            relative tolerance of float4/float8 columns\n"
"                               (default: 1e-9; 0: exact)\n"
"      --abs-tolerance=F        absolute tolerance added to it (default: 0)\n"
"      --show=N                 mismatching rows shown per flow and side (default: 5)\n"
"      --expect-rows=N          check that TABLE then holds exactly N rows\n"
"\n"
"Output:\n"
"      --json                   print a single-line JSON object on stdout instead\n"
"                               of the text report (verification lines go to stderr)\n"
"  -h, --help                   show this help and exit\n"
"\n"
"Latencies are those of committed transactions, from their first statement to\n"
"their commit.  A transaction of one statement (a COPY, a multi-row INSERT, one\n"
"row) that neither rolls back nor uses a savepoint runs without BEGIN/COMMIT.\n"
"Deadlocks and serialization failures count as aborted transactions; any other\n"
"error stops the run.\n"
"\n"
"Rows: device uniform in 1..N, value uniform in [0, 100) with three decimals,\n"
"all drawn from --seed (per client); with --rows, the rows' positions in the\n"
"time domain are deterministic too.\n"
"\n"
"Verification compares the query's output columns with the sink's columns of\n"
"the same names (other sink columns, update_at included, are ignored), in one\n"
"REPEATABLE READ snapshot taken after flush_flow, under the flow's pinned\n"
"settings when the catalog is readable (superuser).  Float columns are rounded\n"
"on both sides to a few more significant digits than the tolerance asks for;\n"
"rows that then differ only in floats within the tolerance are paired up.\n"
"\n"
"Exit status: 0 success, 1 bad arguments or a connection/SQL error, 2 a\n"
"verification failed (mismatching flow, or --expect-rows not met).\n",
		progname, progname);
}

static void
die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void
die_usage(const char *fmt, ...)
{
	va_list		ap;

	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry \"%s --help\" for more information.\n", progname);
	exit(EXIT_ERROR);
}

static void
die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void
die(const char *fmt, ...)
{
	va_list		ap;

	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_ERROR);
}

static long long
parse_int(const char *name, const char *arg, long long min, long long max)
{
	char	   *end;
	long long	v;

	errno = 0;
	while (isspace((unsigned char) *arg))
		arg++;
	v = strtoll(arg, &end, 10);
	if (*arg == '\0' || *end != '\0' || errno == ERANGE)
		die_usage("invalid value \"%s\" for --%s: an integer is expected", arg, name);
	if (v < min || v > max)
		die_usage("invalid value \"%s\" for --%s: must be between %lld and %lld",
				  arg, name, min, max);
	return v;
}

static double
parse_double(const char *name, const char *arg, double min, double max,
			 bool min_exclusive)
{
	char	   *end;
	double		v;

	errno = 0;
	v = strtod(arg, &end);
	if (*arg == '\0' || *end != '\0' || errno == ERANGE || !isfinite(v))
		die_usage("invalid value \"%s\" for --%s: a number is expected", arg, name);
	if (v < min || v > max || (min_exclusive && v == min))
	{
		if (min_exclusive)
			die_usage("invalid value \"%s\" for --%s: must be greater than %g and at most %g",
					  arg, name, min, max);
		die_usage("invalid value \"%s\" for --%s: must be between %g and %g",
				  arg, name, min, max);
	}
	return v;
}

static int64_t
days_from_civil(int y, int m, int d)
{
	/* Howard Hinnant's algorithm: days since 1970-01-01 (proleptic Gregorian). */
	int			era;
	unsigned	yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned) (y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return (int64_t) era * 146097 + (int64_t) doe - 719468;
}

/* Parse --start: 'YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]]][ ][Z|(+|-)HH[[:]MM]]' or '@EPOCH'. */
static int64_t
parse_timestamp(const char *arg)
{
	const char *p = arg;
	int			y, mo, d, h = 0, mi = 0, s = 0, n;
	long		us = 0;
	int			off_min = 0;
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	if (*p == '@')
	{
		double		e = parse_double("start", p + 1, -1e11, 1e11, false);

		return (int64_t) llround(e * 1e6);
	}
	if (sscanf(p, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10)
		goto bad;
	p += n;
	if (*p == ' ' || *p == 'T')
	{
		if (isdigit((unsigned char) p[1]))
		{
			p++;
			if (sscanf(p, "%2d:%2d%n", &h, &mi, &n) != 2 || n != 5)
				goto bad;
			p += n;
			if (*p == ':')
			{
				p++;
				if (!isdigit((unsigned char) p[0]) || !isdigit((unsigned char) p[1]))
					goto bad;
				s = (p[0] - '0') * 10 + (p[1] - '0');
				p += 2;
				if (*p == '.')
				{
					long		scale = 100000;

					p++;
					if (!isdigit((unsigned char) *p))
						goto bad;
					while (isdigit((unsigned char) *p))
					{
						us += (*p - '0') * scale;
						scale /= 10;
						p++;
					}
				}
			}
		}
	}
	if (*p == ' ')
		p++;
	if (*p == 'Z' || *p == 'z')
		p++;
	else if (*p == '+' || *p == '-')
	{
		int			sign = *p == '-' ? -1 : 1;
		int			oh, om = 0;

		p++;
		if (!isdigit((unsigned char) p[0]) || !isdigit((unsigned char) p[1]))
			goto bad;
		oh = (p[0] - '0') * 10 + (p[1] - '0');
		p += 2;
		if (*p == ':')
			p++;
		if (isdigit((unsigned char) p[0]) && isdigit((unsigned char) p[1]))
		{
			om = (p[0] - '0') * 10 + (p[1] - '0');
			p += 2;
		}
		if (oh > 15 || om > 59)
			goto bad;
		off_min = sign * (oh * 60 + om);
	}
	if (*p != '\0')
		goto bad;
	if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || s > 59 ||
		(mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)))
		goto bad;
	return ((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - off_min * 60)
			* INT64_C(1000000)) + us;
bad:
	die_usage("invalid value \"%s\" for --start: expected 'YYYY-MM-DD HH:MM:SS[.ffffff][+HH[:MM]]' or '@EPOCH'",
			  arg);
}

enum
{
	OPT_ABORT = 256, OPT_SAVEPOINT, OPT_UPDATE, OPT_DELETE, OPT_LATE, OPT_DEVICES,
	OPT_START, OPT_SPAN, OPT_SEED, OPT_JSON, OPT_TOLERANCE, OPT_ABS_TOLERANCE,
	OPT_EXPECT_ROWS, OPT_CREATE, OPT_SHOW
};

static void
parse_args(int argc, char **argv)
{
	static const struct option long_options[] = {
		{"dbname", required_argument, NULL, 'd'},
		{"table", required_argument, NULL, 't'},
		{"create", no_argument, NULL, OPT_CREATE},
		{"clients", required_argument, NULL, 'c'},
		{"batch", required_argument, NULL, 'b'},
		{"method", required_argument, NULL, 'm'},
		{"rows", required_argument, NULL, 'n'},
		{"duration", required_argument, NULL, 'T'},
		{"rate", required_argument, NULL, 'R'},
		{"abort-fraction", required_argument, NULL, OPT_ABORT},
		{"savepoint-fraction", required_argument, NULL, OPT_SAVEPOINT},
		{"update-fraction", required_argument, NULL, OPT_UPDATE},
		{"delete-fraction", required_argument, NULL, OPT_DELETE},
		{"late-fraction", required_argument, NULL, OPT_LATE},
		{"devices", required_argument, NULL, OPT_DEVICES},
		{"start", required_argument, NULL, OPT_START},
		{"span", required_argument, NULL, OPT_SPAN},
		{"seed", required_argument, NULL, OPT_SEED},
		{"json", no_argument, NULL, OPT_JSON},
		{"verify", required_argument, NULL, 'V'},
		{"tolerance", required_argument, NULL, OPT_TOLERANCE},
		{"abs-tolerance", required_argument, NULL, OPT_ABS_TOLERANCE},
		{"show", required_argument, NULL, OPT_SHOW},
		{"expect-rows", required_argument, NULL, OPT_EXPECT_ROWS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	int			c;

	opterr = 0;					/* we print our own messages */
	while ((c = getopt_long(argc, argv, ":d:t:c:b:m:n:T:R:V:h", long_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				opt.conninfo = optarg;
				break;
			case 't':
				if (*optarg == '\0')
					die_usage("invalid value \"\" for --table: a table name is expected");
				opt.table = optarg;
				break;
			case OPT_CREATE:
				opt.create = true;
				break;
			case 'c':
				opt.clients = (int) parse_int("clients", optarg, 1, 1000);
				break;
			case 'b':
				opt.batch = (int) parse_int("batch", optarg, 1, 100000000);
				break;
			case 'm':
				if (strcmp(optarg, "copy") == 0)
					opt.method = METHOD_COPY;
				else if (strcmp(optarg, "insert") == 0)
					opt.method = METHOD_INSERT;
				else if (strcmp(optarg, "single") == 0)
					opt.method = METHOD_SINGLE;
				else
					die_usage("invalid value \"%s\" for --method: expected copy, insert or single",
							  optarg);
				break;
			case 'n':
				opt.rows = parse_int("rows", optarg, 0, LLONG_MAX / 4);
				opt.rows_set = true;
				break;
			case 'T':
				opt.duration = parse_double("duration", optarg, 0, 1e7, true);
				break;
			case 'R':
				opt.rate = parse_double("rate", optarg, 0, 1e9, true);
				break;
			case OPT_ABORT:
				opt.abort_fraction = parse_double("abort-fraction", optarg, 0, 1, false);
				break;
			case OPT_SAVEPOINT:
				opt.savepoint_fraction = parse_double("savepoint-fraction", optarg, 0, 1, false);
				break;
			case OPT_UPDATE:
				opt.update_fraction = parse_double("update-fraction", optarg, 0, 1, false);
				break;
			case OPT_DELETE:
				opt.delete_fraction = parse_double("delete-fraction", optarg, 0, 1, false);
				break;
			case OPT_LATE:
				opt.late_fraction = parse_double("late-fraction", optarg, 0, 1, false);
				break;
			case OPT_DEVICES:
				opt.devices = (int) parse_int("devices", optarg, 1, INT_MAX);
				break;
			case OPT_START:
				opt.start_us = parse_timestamp(optarg);
				break;
			case OPT_SPAN:
				opt.span = parse_double("span", optarg, 0, 1e10, true);
				break;
			case OPT_SEED:
				opt.seed = (uint64_t) parse_int("seed", optarg, 0, LLONG_MAX);
				break;
			case OPT_JSON:
				opt.json = true;
				break;
			case 'V':
				{
					char	   *p;

					if (*optarg == '\0')
						die_usage("invalid value \"\" for --verify: flow names are expected");
					/* no empty names: ",a", "a,,b", "a," */
					if (optarg[0] == ',' || optarg[strlen(optarg) - 1] == ',' ||
						strstr(optarg, ",,") != NULL)
						die_usage("invalid value \"%s\" for --verify: empty flow name", optarg);
					if (opt.verify)
					{
						/* --verify given twice: verify both lists */
						p = malloc(strlen(opt.verify) + strlen(optarg) + 2);
						sprintf(p, "%s,%s", opt.verify, optarg);
						opt.verify = p;
					}
					else
						opt.verify = strdup(optarg);
				}
				break;
			case OPT_TOLERANCE:
				opt.tolerance = parse_double("tolerance", optarg, 0, 1, false);
				break;
			case OPT_ABS_TOLERANCE:
				opt.abs_tolerance = parse_double("abs-tolerance", optarg, 0, 1e300, false);
				break;
			case OPT_SHOW:
				opt.show = (int) parse_int("show", optarg, 0, 1000000);
				break;
			case OPT_EXPECT_ROWS:
				opt.expect_rows = parse_int("expect-rows", optarg, 0, LLONG_MAX);
				opt.expect_rows_set = true;
				break;
			case 'h':
				usage();
				exit(0);
			case ':':
				if (strncmp(argv[optind - 1], "--", 2) == 0)
					die_usage("option %s requires an argument", argv[optind - 1]);
				die_usage("option -%c requires an argument", optopt);
			case '?':
			default:
				if (strncmp(argv[optind - 1], "--", 2) == 0)
				{
					const char *arg = argv[optind - 1];
					size_t		len = strcspn(arg, "=");

					for (int i = 0; long_options[i].name; i++)
						if (strlen(long_options[i].name) == len - 2 &&
							strncmp(long_options[i].name, arg + 2, len - 2) == 0)
							die_usage("option --%s does not take an argument", long_options[i].name);
					die_usage("unrecognized option \"%s\"", arg);
				}
				die_usage("unrecognized option -%c", optopt);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument \"%s\"", argv[optind]);

	/* Combinations. */
	if (opt.update_fraction + opt.delete_fraction > 1.0 + 1e-12)
		die_usage("--update-fraction plus --delete-fraction must not exceed 1 (got %g)",
				  opt.update_fraction + opt.delete_fraction);
	if (opt.rows > 0 && opt.duration == 0)
	{
		if (opt.abort_fraction >= 1.0)
			die_usage("--abort-fraction 1 with --rows and no --duration would never commit a row");
		if (opt.update_fraction + opt.delete_fraction >= 1.0)
			die_usage("--update-fraction plus --delete-fraction of 1 with --rows and no --duration would never insert a row");
	}
	if (opt.rows == 0 && opt.duration == 0 && !opt.verify && !opt.expect_rows_set)
		die_usage("nothing to do: give --rows and/or --duration to load, --verify or --expect-rows to check");
	if (opt.start_us + (int64_t) (opt.span * 1e6) < opt.start_us)
		die_usage("--start plus --span is out of range");
}

/* ------------------------------------------------------------------------
 * Small utilities
 * ------------------------------------------------------------------------ */

typedef struct
{
	char	   *data;
	size_t		len;
	size_t		cap;
} Buf;

static void
buf_reserve(Buf *b, size_t more)
{
	if (b->len + more + 1 > b->cap)
	{
		size_t		cap = b->cap ? b->cap : 1024;

		while (cap < b->len + more + 1)
			cap *= 2;
		b->data = realloc(b->data, cap);
		if (!b->data)
		{
			fprintf(stderr, "%s: out of memory\n", progname);
			exit(EXIT_ERROR);
		}
		b->cap = cap;
	}
}

static void
buf_append(Buf *b, const char *s, size_t n)
{
	buf_reserve(b, n);
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

static void
buf_puts(Buf *b, const char *s)
{
	buf_append(b, s, strlen(s));
}

static void
buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
buf_printf(Buf *b, const char *fmt, ...)
{
	va_list		ap;
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	buf_reserve(b, (size_t) n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t) n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t) n;
}

static void
buf_reset(Buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

static void
buf_json_string(Buf *b, const char *s)
{
	buf_puts(b, "\"");
	for (; *s; s++)
	{
		unsigned char ch = (unsigned char) *s;

		if (ch == '"' || ch == '\\')
			buf_printf(b, "\\%c", ch);
		else if (ch == '\n')
			buf_puts(b, "\\n");
		else if (ch == '\t')
			buf_puts(b, "\\t");
		else if (ch < 0x20)
			buf_printf(b, "\\u%04x", ch);
		else
			buf_append(b, (const char *) &ch, 1);
	}
	buf_puts(b, "\"");
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *
xstrdup(const char *s)
{
	char	   *r = strdup(s ? s : "");

	if (!r)
	{
		fprintf(stderr, "%s: out of memory\n", progname);
		exit(EXIT_ERROR);
	}
	return r;
}

/* PQerrorMessage without its trailing newline, in a fresh string. */
static char *
conn_error(PGconn *conn)
{
	char	   *m = xstrdup(PQerrorMessage(conn));
	size_t		n = strlen(m);

	while (n > 0 && (m[n - 1] == '\n' || m[n - 1] == ' '))
		m[--n] = '\0';
	return m;
}

static char *
result_error(const PGresult *res, PGconn *conn)
{
	const char *m = res ? PQresultErrorMessage(res) : NULL;
	char	   *r;
	size_t		n;

	if (!m || !*m)
		return conn_error(conn);
	r = xstrdup(m);
	n = strlen(r);
	while (n > 0 && (r[n - 1] == '\n' || r[n - 1] == ' '))
		r[--n] = '\0';
	return r;
}

/* splitmix64: small, fast, good enough, and trivially seeded per client. */
static inline uint64_t
rng_next(uint64_t *s)
{
	uint64_t	z = (*s += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

static inline double
rng_double(uint64_t *s)
{
	return (rng_next(s) >> 11) * 0x1.0p-53;
}

static inline uint64_t
rng_below(uint64_t *s, uint64_t n)
{
	return n ? rng_next(s) % n : 0;
}

/* Connect with a default connect_timeout, CONNINFO overriding it. */
static PGconn *
connect_db(const char *conninfo, const char *appname)
{
	const char *keys[4];
	const char *vals[4];
	int			i = 0;

	if (!getenv("PGCONNECT_TIMEOUT"))
	{
		keys[i] = "connect_timeout";
		vals[i++] = "10";
	}
	keys[i] = "fallback_application_name";
	vals[i++] = appname;
	keys[i] = "dbname";
	vals[i++] = conninfo;		/* NULL: the environment's */
	keys[i] = NULL;
	vals[i] = NULL;
	return PQconnectdbParams(keys, vals, 1);
}

/* ------------------------------------------------------------------------
 * Load
 * ------------------------------------------------------------------------ */

typedef struct
{
	int			id;
	pthread_t	thread;
	PGconn	   *conn;
	uint64_t	rng;
	long long	quota;			/* rows to commit; -1: unlimited */

	/* results */
	long long	rows;			/* rows committed by insert transactions */
	long long	late_rows;		/* of which late */
	long long	committed;		/* transactions committed */
	long long	aborted;		/* transactions rolled back (incl. failed) */
	long long	failed;			/* of which by a deadlock/serialization error */
	long long	savepoints;		/* savepoints rolled back */
	long long	updated;		/* rows updated (committed) */
	long long	deleted;		/* rows deleted (committed) */
	long long	written;		/* rows written, committed or not */
	double	   *lat;			/* ms, committed transactions */
	size_t		nlat, caplat;
	char	   *error;			/* fatal error, stops the run */

	/* scratch */
	Buf			buf;
	int64_t		cached_sec;
	char		cached_prefix[80];
} Client;

static Client *clients;
static char *qtable;			/* quoted, qualified name of the table */
static unsigned int table_oid;
static pthread_barrier_t start_barrier;
static volatile int stop_flag;
static double t_start, deadline;
static pthread_mutex_t rate_lock = PTHREAD_MUTEX_INITIALIZER;
static double rate_next;

static void
ignore_notice(void *arg, const char *message)
{
	(void) arg;
	(void) message;
}

static void
handle_sigint(int sig)
{
	(void) sig;
	stop_flag = 1;
}

static bool
should_stop(void)
{
	return __atomic_load_n(&stop_flag, __ATOMIC_RELAXED) != 0;
}

static void
set_stop(void)
{
	__atomic_store_n(&stop_flag, 1, __ATOMIC_RELAXED);
}

/* Wait for our turn under --rate; false when the run must stop. */
static bool
rate_wait(long long nrows)
{
	double		t, now;

	if (opt.rate <= 0)
		return true;
	pthread_mutex_lock(&rate_lock);
	now = now_s();
	t = rate_next > now ? rate_next : now;
	rate_next = t + nrows / opt.rate;
	pthread_mutex_unlock(&rate_lock);
	for (;;)
	{
		double		left;
		struct timespec ts;

		if (should_stop())
			return false;
		now = now_s();
		if (opt.duration > 0 && now >= deadline)
			return false;
		left = t - now;
		if (left <= 0)
			return true;
		if (left > 0.1)
			left = 0.1;
		ts.tv_sec = 0;
		ts.tv_nsec = (long) (left * 1e9);
		nanosleep(&ts, NULL);
	}
}

/* Timestamp of the next row: row IDX (counted from the client's committed rows). */
static int64_t
row_ts(Client *c, long long idx, bool *late)
{
	int64_t		span_us = (int64_t) (opt.span * 1e6);
	int64_t		off;

	if (opt.late_fraction > 0 && rng_double(&c->rng) < opt.late_fraction)
	{
		*late = true;
		return opt.start_us + (int64_t) rng_below(&c->rng, (uint64_t) (span_us > 0 ? span_us : 1));
	}
	*late = false;
	if (c->quota > 0)
	{
		/* Client c's rows interleave with the others' over the whole span. */
		double		frac = ((double) idx + (double) c->id / opt.clients) / (double) c->quota;

		off = (int64_t) (frac * (double) span_us);
	}
	else
	{
		/* Duration only: the clock follows the elapsed time through the span. */
		double		frac = (now_s() - t_start) / opt.duration;

		if (frac > 1)
			frac = 1;
		off = (int64_t) (frac * (double) span_us) + (idx - c->rows);
	}
	if (off >= span_us)
		off = span_us > 0 ? span_us - 1 : 0;
	if (off < 0)
		off = 0;
	return opt.start_us + off;
}

/* Append the text of timestamp US as 'YYYY-MM-DD HH:MM:SS.ffffff+00'. */
static void
format_ts(Client *c, Buf *b, int64_t us)
{
	int64_t		sec = us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000);
	int			frac = (int) (us - sec * 1000000);
	char		tail[16];

	if (sec != c->cached_sec || c->cached_prefix[0] == '\0')
	{
		time_t		t = (time_t) sec;
		struct tm	tm;

		gmtime_r(&t, &tm);
		snprintf(c->cached_prefix, sizeof(c->cached_prefix), "%04d-%02d-%02d %02d:%02d:%02d",
				 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
		c->cached_sec = sec;
	}
	buf_puts(b, c->cached_prefix);
	tail[0] = '.';
	for (int i = 6; i >= 1; i--)
	{
		tail[i] = (char) ('0' + frac % 10);
		frac /= 10;
	}
	memcpy(tail + 7, "+00", 4);
	buf_append(b, tail, 10);
}

static void
append_uint(Buf *b, uint64_t v)
{
	char		tmp[24];
	int			n = 0;

	do
	{
		tmp[n++] = (char) ('0' + v % 10);
		v /= 10;
	} while (v);
	buf_reserve(b, (size_t) n);
	while (n > 0)
		b->data[b->len++] = tmp[--n];
	b->data[b->len] = '\0';
}

/* One row's three fields, text; value = milli/1000 with three decimals. */
typedef struct
{
	int64_t		ts;
	int			device;
	int			milli;
	bool		late;
} Row;

static void
gen_row(Client *c, long long idx, Row *r)
{
	r->ts = row_ts(c, idx, &r->late);
	r->device = 1 + (int) rng_below(&c->rng, (uint64_t) opt.devices);
	r->milli = (int) rng_below(&c->rng, 100000);	/* value in [0, 100) */
}

static void
append_value(Buf *b, int milli)
{
	char		tail[5];

	append_uint(b, (uint64_t) (milli / 1000));
	tail[0] = '.';
	tail[1] = (char) ('0' + milli / 100 % 10);
	tail[2] = (char) ('0' + milli / 10 % 10);
	tail[3] = (char) ('0' + milli % 10);
	buf_append(b, tail, 4);
}

typedef enum { SQL_OK, SQL_RETRYABLE, SQL_FATAL } SqlStatus;

/* Classify a failed result; sets c->error for fatal ones. */
static SqlStatus
sql_failure(Client *c, PGresult *res, const char *what)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	if (PQstatus(c->conn) != CONNECTION_BAD && state &&
		(strcmp(state, "40P01") == 0 || strcmp(state, "40001") == 0))
		return SQL_RETRYABLE;
	if (!c->error)
	{
		char	   *m = result_error(res, c->conn);
		size_t		n = strlen(m) + strlen(what) + 64;

		c->error = malloc(n);
		snprintf(c->error, n, "client %d: %s failed: %s", c->id, what, m);
		free(m);
	}
	return SQL_FATAL;
}

static SqlStatus
exec_cmd(Client *c, const char *sql, const char *what)
{
	PGresult   *res = PQexec(c->conn, sql);
	SqlStatus	st = SQL_OK;

	if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
		st = sql_failure(c, res, what);
	PQclear(res);
	return st;
}

/* Insert N rows (positions from IDX on) with the chosen method. */
static SqlStatus
insert_rows(Client *c, long long idx, long long n, long long *late)
{
	Buf		   *b = &c->buf;
	Row			r;
	PGresult   *res;
	SqlStatus	st = SQL_OK;

	*late = 0;
	c->written += n;
	if (opt.method == METHOD_COPY)
	{
		buf_reset(b);
		buf_printf(b, "COPY %s (ts, device, value) FROM STDIN", qtable);
		res = PQexec(c->conn, b->data);
		if (PQresultStatus(res) != PGRES_COPY_IN)
		{
			st = sql_failure(c, res, "COPY");
			PQclear(res);
			return st;
		}
		PQclear(res);
		buf_reset(b);
		for (long long i = 0; i < n; i++)
		{
			gen_row(c, idx + i, &r);
			*late += r.late;
			format_ts(c, b, r.ts);
			buf_append(b, "\t", 1);
			append_uint(b, (uint64_t) r.device);
			buf_append(b, "\t", 1);
			append_value(b, r.milli);
			buf_append(b, "\n", 1);
			if (b->len >= 65536)
			{
				if (PQputCopyData(c->conn, b->data, (int) b->len) != 1)
					break;
				buf_reset(b);
			}
		}
		if (b->len > 0)
			PQputCopyData(c->conn, b->data, (int) b->len);
		PQputCopyEnd(c->conn, NULL);
		res = PQgetResult(c->conn);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			st = sql_failure(c, res, "COPY");
		PQclear(res);
		while ((res = PQgetResult(c->conn)) != NULL)
			PQclear(res);
		return st;
	}
	else if (opt.method == METHOD_INSERT)
	{
		buf_reset(b);
		buf_printf(b, "INSERT INTO %s (ts, device, value) VALUES ", qtable);
		for (long long i = 0; i < n; i++)
		{
			gen_row(c, idx + i, &r);
			*late += r.late;
			buf_append(b, i ? ",('" : "('", i ? 3 : 2);
			format_ts(c, b, r.ts);
			buf_append(b, "',", 2);
			append_uint(b, (uint64_t) r.device);
			buf_append(b, ",", 1);
			append_value(b, r.milli);
			buf_append(b, ")", 1);
		}
		return exec_cmd(c, b->data, "INSERT");
	}
	else
	{
		char		tsbuf[40], devbuf[16], valbuf[24];
		const char *params[3] = {tsbuf, devbuf, valbuf};

		for (long long i = 0; i < n; i++)
		{
			gen_row(c, idx + i, &r);
			*late += r.late;
			buf_reset(b);
			format_ts(c, b, r.ts);
			snprintf(tsbuf, sizeof(tsbuf), "%s", b->data);
			snprintf(devbuf, sizeof(devbuf), "%d", r.device);
			snprintf(valbuf, sizeof(valbuf), "%d.%03d", r.milli / 1000, r.milli % 1000);
			res = PQexecPrepared(c->conn, "flowload_insert", 3, params, NULL, NULL, 0);
			if (PQresultStatus(res) != PGRES_COMMAND_OK)
				st = sql_failure(c, res, "INSERT");
			PQclear(res);
			if (st != SQL_OK)
				return st;
		}
		return SQL_OK;
	}
}

/*
 * UPDATE or DELETE a few random rows among the most recently written blocks of
 * the table: a TID scan, so that it stays cheap without any index.  Returns the
 * number of rows affected through *affected.
 */
static SqlStatus
modify_rows(Client *c, bool update, long long *affected)
{
	char		obuf[128], ibuf[128], dbuf[32], sbuf[32];
	int			k = 1 + (int) rng_below(&c->rng, 5);
	int			window = (int) rng_below(&c->rng, 256);
	int			ol = 0, il = 0;
	const char *params[4];
	PGresult   *res;
	SqlStatus	st = SQL_OK;

	ol += snprintf(obuf + ol, sizeof(obuf) - ol, "{");
	il += snprintf(ibuf + il, sizeof(ibuf) - il, "{");
	for (int i = 0; i < k; i++)
	{
		ol += snprintf(obuf + ol, sizeof(obuf) - ol, "%s%d", i ? "," : "",
					   window + (int) rng_below(&c->rng, 8));
		il += snprintf(ibuf + il, sizeof(ibuf) - il, "%s%d", i ? "," : "",
					   1 + (int) rng_below(&c->rng, 160));
	}
	snprintf(obuf + ol, sizeof(obuf) - ol, "}");
	snprintf(ibuf + il, sizeof(ibuf) - il, "}");
	params[0] = obuf;
	params[1] = ibuf;
	c->written += k;
	if (update)
	{
		int			delta = (int) rng_below(&c->rng, 20001) - 10000;	/* +-10.000 */
		int			shift = rng_below(&c->rng, 2) ? (int) rng_below(&c->rng, 241) - 120 : 0;

		snprintf(dbuf, sizeof(dbuf), "%d.%03d", delta / 1000, abs(delta % 1000));
		if (delta < 0 && delta > -1000)
			snprintf(dbuf, sizeof(dbuf), "-0.%03d", -delta);
		snprintf(sbuf, sizeof(sbuf), "%d", shift);
		params[2] = dbuf;
		params[3] = sbuf;
		res = PQexecPrepared(c->conn, "flowload_update", 4, params, NULL, NULL, 0);
	}
	else
		res = PQexecPrepared(c->conn, "flowload_delete", 2, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		st = sql_failure(c, res, update ? "UPDATE" : "DELETE");
	else
		*affected = atoll(PQcmdTuples(res));
	PQclear(res);
	return st;
}

static void
record_latency(Client *c, double ms)
{
	if (c->nlat == c->caplat)
	{
		c->caplat = c->caplat ? c->caplat * 2 : 4096;
		c->lat = realloc(c->lat, c->caplat * sizeof(double));
		if (!c->lat)
		{
			fprintf(stderr, "%s: out of memory\n", progname);
			exit(EXIT_ERROR);
		}
	}
	c->lat[c->nlat++] = ms;
}

static bool
prepare_statements(Client *c)
{
	Buf			b = {0};
	PGresult   *res;
	bool		ok = true;
	const char *where =
		"WHERE ctid = ANY (ARRAY(SELECT ('(' || greatest(n.nb - 1 - u.o, 0) || ',' || u.it || ')')::pg_catalog.tid"
		" FROM unnest($1::int[], $2::int[]) AS u(o, it),"
		" (SELECT pg_catalog.pg_relation_size(%u::pg_catalog.regclass)"
		" / pg_catalog.current_setting('block_size')::int AS nb) AS n))";

	for (int i = 0; i < 3 && ok; i++)
	{
		const char *name;

		buf_reset(&b);
		if (i == 0)
		{
			if (opt.method != METHOD_SINGLE)
				continue;
			name = "flowload_insert";
			buf_printf(&b, "INSERT INTO %s (ts, device, value) VALUES ($1, $2, $3)", qtable);
		}
		else if (i == 1)
		{
			if (opt.update_fraction == 0)
				continue;
			name = "flowload_update";
			buf_printf(&b, "UPDATE %s SET value = value + $3::float8, "
					   "ts = ts + pg_catalog.make_interval(secs => $4::float8) ", qtable);
			buf_printf(&b, where, table_oid);
		}
		else
		{
			if (opt.delete_fraction == 0)
				continue;
			name = "flowload_delete";
			buf_printf(&b, "DELETE FROM %s ", qtable);
			buf_printf(&b, where, table_oid);
		}
		res = PQprepare(c->conn, name, b.data, 0, NULL);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
		{
			sql_failure(c, res, "PREPARE");
			ok = false;
		}
		PQclear(res);
	}
	free(b.data);
	return ok;
}

static void *
client_main(void *arg)
{
	Client	   *c = arg;

	pthread_barrier_wait(&start_barrier);
	if (c->error)
		return NULL;

	while (!should_stop())
	{
		double		u, t0, t1;
		bool		abort_it, savepoint, single_stmt;
		SqlStatus	st = SQL_OK;
		long long	n = 0, late = 0, late_sp, affected = 0;
		int			kind;		/* 0 insert, 1 update, 2 delete */

		if (c->quota >= 0 && c->rows >= c->quota)
			break;
		if (opt.duration > 0 && now_s() >= deadline)
			break;

		u = rng_double(&c->rng);
		kind = u < opt.update_fraction ? 1 :
			u < opt.update_fraction + opt.delete_fraction ? 2 : 0;
		abort_it = opt.abort_fraction > 0 && rng_double(&c->rng) < opt.abort_fraction;
		savepoint = kind == 0 && opt.savepoint_fraction > 0 &&
			rng_double(&c->rng) < opt.savepoint_fraction;
		if (kind == 0)
		{
			n = opt.batch;
			if (c->quota >= 0 && n > c->quota - c->rows)
				n = c->quota - c->rows;
		}
		single_stmt = !abort_it && !savepoint &&
			(kind != 0 || opt.method != METHOD_SINGLE || n == 1);

		if (!rate_wait(kind == 0 ? n * (savepoint ? 2 : 1) : 1))
			break;

		t0 = now_s();
		if (!single_stmt)
			st = exec_cmd(c, "BEGIN", "BEGIN");
		if (st == SQL_OK)
		{
			if (kind == 0)
				st = insert_rows(c, c->rows, n, &late);
			else
				st = modify_rows(c, kind == 1, &affected);
		}
		if (st == SQL_OK && savepoint)
		{
			st = exec_cmd(c, "SAVEPOINT flowload_sp", "SAVEPOINT");
			if (st == SQL_OK)
				st = insert_rows(c, c->rows + n, opt.batch, &late_sp);
			if (st == SQL_OK)
				st = exec_cmd(c, "ROLLBACK TO SAVEPOINT flowload_sp", "ROLLBACK TO SAVEPOINT");
			if (st == SQL_OK)
				c->savepoints++;
		}
		if (st == SQL_OK && abort_it)
		{
			st = exec_cmd(c, "ROLLBACK", "ROLLBACK");
			if (st == SQL_OK)
				c->aborted++;
		}
		else if (st == SQL_OK)
		{
			if (!single_stmt)
				st = exec_cmd(c, "COMMIT", "COMMIT");
			if (st == SQL_OK)
			{
				t1 = now_s();
				c->committed++;
				c->rows += n;
				c->late_rows += late;
				if (kind == 1)
					c->updated += affected;
				else if (kind == 2)
					c->deleted += affected;
				record_latency(c, (t1 - t0) * 1000.0);
			}
		}
		if (st == SQL_RETRYABLE)
		{
			/* deadlock or serialization failure: roll back, go on */
			if (!single_stmt && exec_cmd(c, "ROLLBACK", "ROLLBACK") != SQL_OK)
				st = SQL_FATAL;
			else
			{
				c->aborted++;
				c->failed++;
			}
		}
		if (st == SQL_FATAL)
		{
			set_stop();
			break;
		}
	}
	return NULL;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static double
percentile(const double *v, size_t n, double p)
{
	size_t		i;

	if (n == 0)
		return 0;
	/* nearest rank */
	i = (size_t) ceil(p / 100.0 * (double) n);
	if (i < 1)
		i = 1;
	if (i > n)
		i = n;
	return v[i - 1];
}

typedef struct
{
	bool		ran;
	double		elapsed;
	long long	rows, late_rows, committed, aborted, failed, savepoints, updated, deleted, written;
	double		p50, p95, p99, lat_max, lat_mean;
	char	   *error;
} LoadResult;

static void
run_load(LoadResult *lr)
{
	long long	per, extra;
	double		t_end;
	double	   *all;
	size_t		nall = 0;

	clients = calloc((size_t) opt.clients, sizeof(Client));
	pthread_barrier_init(&start_barrier, NULL, (unsigned) opt.clients + 1);
	per = opt.rows / opt.clients;
	extra = opt.rows % opt.clients;

	for (int i = 0; i < opt.clients; i++)
	{
		Client	   *c = &clients[i];

		c->id = i;
		c->rng = opt.seed * UINT64_C(0x100000001B3) + (uint64_t) i * UINT64_C(0x9E3779B97F4A7C15) + 12345;
		(void) rng_next(&c->rng);
		c->quota = opt.rows > 0 ? per + (i < extra ? 1 : 0) : -1;
		c->cached_sec = INT64_MIN;
		c->conn = connect_db(opt.conninfo, "flowload");
		if (PQstatus(c->conn) != CONNECTION_OK)
		{
			char	   *m = conn_error(c->conn);

			die("client %d could not connect to the server: %s", i, m);
		}
		PQsetNoticeProcessor(c->conn, ignore_notice, NULL);
		if (!prepare_statements(c))
			die("%s", c->error);
	}
	for (int i = 0; i < opt.clients; i++)
		if (pthread_create(&clients[i].thread, NULL, client_main, &clients[i]) != 0)
			die("could not start client thread %d", i);

	t_start = now_s();
	deadline = t_start + opt.duration;
	rate_next = t_start;
	pthread_barrier_wait(&start_barrier);
	for (int i = 0; i < opt.clients; i++)
		pthread_join(clients[i].thread, NULL);
	t_end = now_s();

	memset(lr, 0, sizeof(*lr));
	lr->ran = true;
	lr->elapsed = t_end - t_start;
	for (int i = 0; i < opt.clients; i++)
	{
		Client	   *c = &clients[i];

		lr->rows += c->rows;
		lr->late_rows += c->late_rows;
		lr->committed += c->committed;
		lr->aborted += c->aborted;
		lr->failed += c->failed;
		lr->savepoints += c->savepoints;
		lr->updated += c->updated;
		lr->deleted += c->deleted;
		lr->written += c->written;
		nall += c->nlat;
		if (c->error && !lr->error)
			lr->error = c->error;
	}
	all = malloc((nall ? nall : 1) * sizeof(double));
	nall = 0;
	for (int i = 0; i < opt.clients; i++)
	{
		memcpy(all + nall, clients[i].lat, clients[i].nlat * sizeof(double));
		nall += clients[i].nlat;
		PQfinish(clients[i].conn);
	}
	qsort(all, nall, sizeof(double), cmp_double);
	lr->p50 = percentile(all, nall, 50);
	lr->p95 = percentile(all, nall, 95);
	lr->p99 = percentile(all, nall, 99);
	lr->lat_max = nall ? all[nall - 1] : 0;
	{
		double		sum = 0;

		for (size_t i = 0; i < nall; i++)
			sum += all[i];
		lr->lat_mean = nall ? sum / (double) nall : 0;
	}
	free(all);
}

/* ------------------------------------------------------------------------
 * Verification
 * ------------------------------------------------------------------------ */

typedef struct
{
	char	   *flow;
	bool		error;			/* could not verify: message in note */
	long long	mismatches;
	long long	sink_rows;
	long long	query_rows;
	long long	only_sink;		/* unmatched rows of each side */
	long long	only_query;
	char	   *note;
	Buf			examples;		/* text shown under the summary line */
} FlowResult;

typedef struct
{
	char	  **vals;			/* ncols values, NULL = SQL NULL */
	char	   *key;			/* the non-float columns, for sorting */
	long long	count;			/* copies of the row on its side */
	long long	left;			/* of which not paired by the tolerance pass */
} DiffRow;

static int	diff_ncols;
static bool *diff_isfloat;

static int
cmp_diffrow(const void *a, const void *b)
{
	const DiffRow *x = *(DiffRow *const *) a, *y = *(DiffRow *const *) b;

	return strcmp(x->key, y->key);
}

static double float_slack;		/* rounding error allowed in the tolerance pass */

static bool
float_close(const char *a, const char *b)
{
	double		x, y, m;

	if (a == NULL || b == NULL)
		return a == b;
	if (strcmp(a, b) == 0)
		return true;
	x = strtod(a, NULL);
	y = strtod(b, NULL);
	if (x == y)
		return true;
	if (isnan(x) || isnan(y) || isinf(x) || isinf(y))
		return false;
	m = fmax(fabs(x), fabs(y));
	return fabs(x - y) <= (opt.tolerance + float_slack) * m + opt.abs_tolerance;
}

static bool
rows_close(const DiffRow *a, const DiffRow *b)
{
	for (int i = 0; i < diff_ncols; i++)
		if (diff_isfloat[i] && !float_close(a->vals[i], b->vals[i]))
			return false;
	return true;
}

static void
format_row(Buf *b, const DiffRow *r, char **names)
{
	buf_puts(b, "(");
	for (int i = 0; i < diff_ncols; i++)
	{
		const char *v = r->vals[i];
		size_t		n;

		buf_printf(b, "%s%s=", i ? ", " : "", names[i]);
		if (!v)
		{
			buf_puts(b, "NULL");
			continue;
		}
		n = strlen(v);
		/* rounded floats: no trailing zeros */
		if (diff_isfloat[i] && strchr(v, '.') && !strpbrk(v, "eE"))
		{
			while (n > 0 && v[n - 1] == '0')
				n--;
			if (n > 0 && v[n - 1] == '.')
				n--;
		}
		buf_append(b, v, n);
	}
	buf_puts(b, ")");
}

static char *
quote_ident(PGconn *conn, const char *name)
{
	char	   *q = PQescapeIdentifier(conn, name, strlen(name));
	char	   *r = xstrdup(q);

	PQfreemem(q);
	return r;
}

/* Run a query that must succeed; on failure, fill fr and return NULL. */
static PGresult *
must_query(PGconn *conn, FlowResult *fr, const char *what, const char *sql,
		   int nparams, const char *const *params, ExecStatusType expected)
{
	PGresult   *res = nparams ? PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0)
		: PQexec(conn, sql);

	if (PQresultStatus(res) != expected)
	{
		char	   *m = result_error(res, conn);
		Buf			b = {0};

		buf_printf(&b, "%s: %s", what, m);
		fr->error = true;
		fr->note = b.data;
		free(m);
		PQclear(res);
		return NULL;
	}
	return res;
}

static void
verify_flow(PGconn *conn, FlowResult *fr)
{
	const char *params[1] = {fr->flow};
	PGresult   *res;
	char	   *query = NULL, *sink = NULL, *sink_oid = NULL;
	bool		expires = false;
	int			nset = 0;
	char	  **set_names = NULL, **set_vals = NULL;
	int			ncols;
	char	  **names;
	bool	   *isfloat;
	Buf			sql = {0};
	int			digits = 0;
	long long	nside[3] = {0, 0, 0};
	DiffRow   **stored[3] = {NULL, NULL, NULL};
	long long	nstored[3] = {0, 0, 0};
	long long	matched = 0;

	/* 1. the flow: query, sink */
	res = must_query(conn, fr, "reading flowpg.flows",
					 "SELECT f.query, pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname),"
					 " c.oid, f.expire_after IS NOT NULL"
					 " FROM flowpg.flows f"
					 " JOIN pg_catalog.pg_class c ON c.oid = f.sink_table::pg_catalog.oid"
					 " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
					 " WHERE f.flow_name = $1", 1, params, PGRES_TUPLES_OK);
	if (!res)
		return;
	if (PQntuples(res) != 1)
	{
		Buf			b = {0};

		buf_printf(&b, "flow \"%s\" does not exist", fr->flow);
		fr->error = true;
		fr->note = b.data;
		PQclear(res);
		return;
	}
	if (PQgetisnull(res, 0, 0) || PQgetvalue(res, 0, 0)[0] == '\0')
	{
		Buf			b = {0};

		buf_printf(&b, "flowpg.flows shows no query for flow \"%s\"", fr->flow);
		fr->error = true;
		fr->note = b.data;
		PQclear(res);
		return;
	}
	query = xstrdup(PQgetvalue(res, 0, 0));
	sink = xstrdup(PQgetvalue(res, 0, 1));
	sink_oid = xstrdup(PQgetvalue(res, 0, 2));
	expires = PQgetvalue(res, 0, 3)[0] == 't';
	PQclear(res);

	/* 2. its pinned settings (the catalog is readable by superusers only) */
	res = PQexecParams(conn,
					   "SELECT pg_catalog.split_part(s, '=', 1), pg_catalog.substr(s, pg_catalog.strpos(s, '=') + 1)"
					   " FROM flowpg.flow f, pg_catalog.unnest(f.settings) AS s WHERE f.flow_name = $1",
					   1, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) == PGRES_TUPLES_OK)
	{
		nset = PQntuples(res);
		set_names = calloc((size_t) nset + 1, sizeof(char *));
		set_vals = calloc((size_t) nset + 1, sizeof(char *));
		for (int i = 0; i < nset; i++)
		{
			set_names[i] = xstrdup(PQgetvalue(res, i, 0));
			set_vals[i] = xstrdup(PQgetvalue(res, i, 1));
		}
	}
	else
		fprintf(stderr, "%s: note: cannot read the pinned settings of flow \"%s\" (not a superuser?);"
				" its query runs under this session's settings\n", progname, fr->flow);
	PQclear(res);

	/* 3. flush (the name as flowpg.flows has it: quoted, as flush_flow reads names) */
	res = must_query(conn, fr, "flowpg.flush_flow", "SELECT flowpg.flush_flow(pg_catalog.quote_ident($1))",
					 1, params, PGRES_TUPLES_OK);
	if (!res)
		goto done;
	PQclear(res);

	/* 4. one snapshot for both sides, the flow's settings */
	res = must_query(conn, fr, "BEGIN", "BEGIN ISOLATION LEVEL REPEATABLE READ",
					 0, NULL, PGRES_COMMAND_OK);
	if (!res)
		goto done;
	PQclear(res);
	res = must_query(conn, fr, "SET", "SET LOCAL work_mem = '256MB'", 0, NULL, PGRES_COMMAND_OK);
	if (!res)
		goto rollback;
	PQclear(res);
	for (int i = 0; i < nset; i++)
	{
		const char *p2[2] = {set_names[i], set_vals[i]};

		res = PQexecParams(conn, "SELECT pg_catalog.set_config($1, $2, true)", 2, NULL, p2, NULL, NULL, 0);
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			char	   *m = result_error(res, conn);
			Buf			b = {0};

			buf_printf(&b, "applying the flow's setting %s=%s: %s", set_names[i], set_vals[i], m);
			fr->error = true;
			fr->note = b.data;
			PQclear(res);
			goto rollback;
		}
		PQclear(res);
	}

	/* 5. the query's output columns */
	buf_printf(&sql, "SELECT * FROM (\n%s\n) AS flowload_q LIMIT 0", query);
	res = must_query(conn, fr, "describing the flow's query", sql.data, 0, NULL, PGRES_TUPLES_OK);
	if (!res)
		goto rollback;
	ncols = PQnfields(res);
	names = calloc((size_t) ncols + 1, sizeof(char *));
	isfloat = calloc((size_t) ncols + 1, sizeof(bool));
	for (int i = 0; i < ncols; i++)
	{
		names[i] = xstrdup(PQfname(res, i));
		isfloat[i] = PQftype(res, i) == FLOAT4OID || PQftype(res, i) == FLOAT8OID;
	}
	PQclear(res);

	/* 6. the sink's columns: each query column must be there */
	{
		const char *p1[1] = {sink_oid};
		Buf			extra = {0};

		res = must_query(conn, fr, "reading the sink's columns",
						 "SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = $1::pg_catalog.oid"
						 " AND attnum > 0 AND NOT attisdropped AND attname <> 'update_at' ORDER BY attnum",
						 1, p1, PGRES_TUPLES_OK);
		if (!res)
			goto rollback;
		for (int i = 0; i < ncols; i++)
		{
			bool		found = false;

			for (int j = 0; j < PQntuples(res) && !found; j++)
				found = strcmp(PQgetvalue(res, j, 0), names[i]) == 0;
			if (!found)
			{
				Buf			b = {0};

				buf_printf(&b, "the sink %s has no column \"%s\" (an output column of the query)",
						   sink, names[i]);
				fr->error = true;
				fr->note = b.data;
				PQclear(res);
				goto rollback;
			}
		}
		for (int j = 0; j < PQntuples(res); j++)
		{
			bool		found = false;

			for (int i = 0; i < ncols && !found; i++)
				found = strcmp(PQgetvalue(res, j, 0), names[i]) == 0;
			if (!found)
				buf_printf(&extra, "%s%s", extra.len ? ", " : "", PQgetvalue(res, j, 0));
		}
		if (extra.len)
			fprintf(stderr, "%s: note: flow \"%s\": sink columns not produced by the query are not compared: %s\n",
					progname, fr->flow, extra.data);
		free(extra.data);
		PQclear(res);
	}

	/*
	 * 7. The difference, both ways, with EXCEPT ALL semantics: each distinct
	 * row of the union of both sides, with its number of copies in the sink
	 * minus its number in the query; rows where that is not 0 mismatch (|net|
	 * times).  One aggregation over one scan of each side, and the empty
	 * grouping set counts each side.  Float columns are rounded (in float8
	 * arithmetic) to DIGITS significant digits on both sides, enough that
	 * rounded values that are equal are within the tolerance; values within
	 * the tolerance that round differently are paired up by the client.
	 */
	if (opt.tolerance > 0)
	{
		digits = (int) ceil(-log10(opt.tolerance)) + 2;
		if (digits < 2)
			digits = 2;
		if (digits > 15)
			digits = 15;
		float_slack = 1.01 * pow(10.0, 1 - digits);
	}
	else
		float_slack = 0;
	buf_reset(&sql);
	buf_puts(&sql, "SELECT GROUPING(c0) AS g, pg_catalog.sum(d) AS net,"
			 " pg_catalog.count(*) FILTER (WHERE d > 0) AS ns, pg_catalog.count(*) FILTER (WHERE d < 0) AS nq");
	for (int i = 0; i < ncols; i++)
	{
		if (isfloat[i])
			buf_printf(&sql, ", c%d::pg_catalog.numeric", i);
		else
			buf_printf(&sql, ", c%d", i);
	}
	buf_puts(&sql, "\nFROM (");
	for (int side = 0; side < 2; side++)
	{
		buf_puts(&sql, side == 0 ? "SELECT " : "\nUNION ALL SELECT ");
		for (int i = 0; i < ncols; i++)
		{
			char	   *qi = quote_ident(conn, names[i]);
			Buf			x = {0};

			buf_printf(&x, "t.%s::pg_catalog.float8", qi);
			if (isfloat[i] && digits > 0)
				buf_printf(&sql,
						   "CASE WHEN %s = 0 OR %s IN ('NaN', 'Infinity', '-Infinity')"
						   " OR pg_catalog.abs(%s) NOT BETWEEN 1e-290 AND 1e290 THEN %s"
						   " ELSE pg_catalog.round(%s / 10::pg_catalog.float8 ^ (pg_catalog.floor(pg_catalog.log(pg_catalog.abs(%s))) - %d))"
						   " * 10::pg_catalog.float8 ^ (pg_catalog.floor(pg_catalog.log(pg_catalog.abs(%s))) - %d) END AS c%d, ",
						   x.data, x.data, x.data, x.data, x.data, x.data, digits - 1, x.data, digits - 1, i);
			else
				buf_printf(&sql, "t.%s AS c%d, ", qi, i);
			free(x.data);
			free(qi);
		}
		if (side == 0)
			buf_printf(&sql, "1 AS d FROM %s AS t", sink);
		else
			buf_printf(&sql, "-1 FROM (\n%s\n) AS t", query);
	}
	buf_puts(&sql, "\n) AS u GROUP BY GROUPING SETS ((");
	for (int i = 0; i < ncols; i++)
		buf_printf(&sql, "%sc%d", i ? ", " : "", i);
	buf_puts(&sql, "), ()) HAVING pg_catalog.sum(d) <> 0 OR GROUPING(c0) = 1");

	if (!PQsendQuery(conn, sql.data) || !PQsetSingleRowMode(conn))
	{
		char	   *m = conn_error(conn);
		Buf			b = {0};

		buf_printf(&b, "comparing the sink with the query: %s", m);
		fr->error = true;
		fr->note = b.data;
		goto rollback;
	}
	diff_ncols = ncols;
	diff_isfloat = isfloat;
	for (int s = 1; s <= 2; s++)
		stored[s] = malloc(sizeof(DiffRow *) * 1024);
	{
		long long	cap[3] = {0, 1024, 1024};
		bool		failed = false;

		while ((res = PQgetResult(conn)) != NULL)
		{
			ExecStatusType rs = PQresultStatus(res);

			if (rs == PGRES_SINGLE_TUPLE)
			{
				long long	net = atoll(PQgetvalue(res, 0, 1));
				int			side = net > 0 ? 1 : 2;

				if (atoi(PQgetvalue(res, 0, 0)) != 0)
				{
					/* the empty grouping set: the number of rows of each side */
					fr->sink_rows = atoll(PQgetvalue(res, 0, 2));
					fr->query_rows = atoll(PQgetvalue(res, 0, 3));
				}
				else
				{
					nside[side] += net > 0 ? net : -net;
					if (nstored[side] < PAIRING_CAP)
					{
						DiffRow    *r = calloc(1, sizeof(DiffRow));
						Buf			key = {0};

						r->count = r->left = net > 0 ? net : -net;
						r->vals = calloc((size_t) ncols + 1, sizeof(char *));
						for (int i = 0; i < ncols; i++)
						{
							if (!PQgetisnull(res, 0, 4 + i))
								r->vals[i] = xstrdup(PQgetvalue(res, 0, 4 + i));
							if (!isfloat[i] || digits == 0)
							{
								if (r->vals[i])
								{
									buf_puts(&key, "\x02");
									buf_puts(&key, r->vals[i]);
								}
								else
									buf_puts(&key, "\x01");
							}
						}
						r->key = key.data ? key.data : xstrdup("");
						if (nstored[side] == cap[side])
						{
							cap[side] *= 2;
							stored[side] = realloc(stored[side], sizeof(DiffRow *) * (size_t) cap[side]);
						}
						stored[side][nstored[side]++] = r;
					}
				}
			}
			else if (rs != PGRES_TUPLES_OK && !failed)
			{
				char	   *m = result_error(res, conn);
				Buf			b = {0};

				buf_printf(&b, "comparing the sink with the query: %s", m);
				fr->error = true;
				fr->note = b.data;
				failed = true;
				free(m);
			}
			PQclear(res);
		}
		if (failed)
			goto rollback;
	}
	res = PQexec(conn, "COMMIT");
	PQclear(res);

	/* 8. the tolerance pass: pair rows with equal keys and close floats */
	if (digits > 0)
	{
		long long	i = 0, j = 0;

		qsort(stored[1], (size_t) nstored[1], sizeof(DiffRow *), cmp_diffrow);
		qsort(stored[2], (size_t) nstored[2], sizeof(DiffRow *), cmp_diffrow);
		while (i < nstored[1] && j < nstored[2])
		{
			int			c = strcmp(stored[1][i]->key, stored[2][j]->key);

			if (c < 0)
				i++;
			else if (c > 0)
				j++;
			else
			{
				long long	ie = i, je = j;

				while (ie < nstored[1] && strcmp(stored[1][ie]->key, stored[1][i]->key) == 0)
					ie++;
				while (je < nstored[2] && strcmp(stored[2][je]->key, stored[2][j]->key) == 0)
					je++;
				for (long long a = i; a < ie; a++)
					for (long long b = j; b < je && stored[1][a]->left > 0; b++)
						if (stored[2][b]->left > 0 && rows_close(stored[1][a], stored[2][b]))
						{
							long long	m = stored[1][a]->left < stored[2][b]->left ?
								stored[1][a]->left : stored[2][b]->left;

							stored[1][a]->left -= m;
							stored[2][b]->left -= m;
							matched += m;
						}
				i = ie;
				j = je;
			}
		}
	}
	fr->only_sink = nside[1] - matched;
	fr->only_query = nside[2] - matched;
	fr->mismatches = fr->only_sink + fr->only_query;
	if (fr->mismatches > 0 && opt.show > 0)
	{
		for (int side = 1; side <= 2; side++)
		{
			int			shown = 0;

			for (long long k = 0; k < nstored[side] && shown < opt.show; k++)
			{
				if (stored[side][k]->left == 0)
					continue;
				buf_puts(&fr->examples, side == 1 ? "  only in the sink:  " : "  only in the query: ");
				format_row(&fr->examples, stored[side][k], names);
				if (stored[side][k]->left > 1)
					buf_printf(&fr->examples, " x %lld", stored[side][k]->left);
				buf_puts(&fr->examples, "\n");
				shown++;
			}
		}
		if (digits > 0)
			buf_printf(&fr->examples, "  (float columns shown rounded to %d significant digits)\n", digits);
	}
	if (expires)
		fprintf(stderr, "%s: note: flow \"%s\" has expire_after: windows it no longer maintains are compared too\n",
				progname, fr->flow);
	for (int s = 1; s <= 2; s++)
	{
		for (long long k = 0; k < nstored[s]; k++)
		{
			for (int i = 0; i < ncols; i++)
				free(stored[s][k]->vals[i]);
			free(stored[s][k]->vals);
			free(stored[s][k]->key);
			free(stored[s][k]);
		}
		free(stored[s]);
	}
	for (int i = 0; i < ncols; i++)
		free(names[i]);
	free(names);
	free(isfloat);
	goto done;

rollback:
	res = PQexec(conn, "ROLLBACK");
	PQclear(res);
done:
	free(sql.data);
	free(query);
	free(sink);
	free(sink_oid);
	for (int i = 0; i < nset; i++)
	{
		free(set_names[i]);
		free(set_vals[i]);
	}
	free(set_names);
	free(set_vals);
}

/* ------------------------------------------------------------------------
 * main
 * ------------------------------------------------------------------------ */

static PGresult *
main_query(PGconn *conn, const char *what, const char *sql, int nparams,
		   const char *const *params, ExecStatusType expected)
{
	PGresult   *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);

	if (PQresultStatus(res) != expected)
	{
		char	   *m = result_error(res, conn);

		die("%s: %s", what, m);
	}
	return res;
}

/* Resolve --table (creating it with --create); sets qtable and table_oid. */
static void
resolve_table(PGconn *conn)
{
	const char *params[1] = {opt.table};
	PGresult   *res;
	bool		has_ts = false, has_device = false, has_value = false;

	res = main_query(conn, "resolving --table", "SELECT pg_catalog.to_regclass($1)::pg_catalog.oid",
					 1, params, PGRES_TUPLES_OK);
	if (PQgetisnull(res, 0, 0) && opt.create)
	{
		Buf			b = {0};

		PQclear(res);
		buf_printf(&b, "CREATE TABLE IF NOT EXISTS %s (ts timestamptz NOT NULL, device int NOT NULL, value float8)",
				   opt.table);
		res = main_query(conn, "creating the table", b.data, 0, NULL, PGRES_COMMAND_OK);
		free(b.data);
		PQclear(res);
		res = main_query(conn, "resolving --table", "SELECT pg_catalog.to_regclass($1)::pg_catalog.oid",
						 1, params, PGRES_TUPLES_OK);
	}
	if (PQgetisnull(res, 0, 0))
		die("table \"%s\" does not exist (create it, or use --create)", opt.table);
	table_oid = (unsigned int) strtoul(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	{
		char		oidbuf[16];
		const char *p1[1] = {oidbuf};

		snprintf(oidbuf, sizeof(oidbuf), "%u", table_oid);
		res = main_query(conn, "reading the table",
						 "SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname), c.relkind"
						 " FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
						 " WHERE c.oid = $1::pg_catalog.oid", 1, p1, PGRES_TUPLES_OK);
		if (PQntuples(res) != 1)
			die("table \"%s\" does not exist", opt.table);
		qtable = xstrdup(PQgetvalue(res, 0, 0));
		if (strchr("rp", PQgetvalue(res, 0, 1)[0]) == NULL)
			die("\"%s\" is not a table", opt.table);
		PQclear(res);
		res = main_query(conn, "reading the table's columns",
						 "SELECT attname, pg_catalog.format_type(atttypid, atttypmod) FROM pg_catalog.pg_attribute"
						 " WHERE attrelid = $1::pg_catalog.oid AND attnum > 0 AND NOT attisdropped",
						 1, p1, PGRES_TUPLES_OK);
		for (int i = 0; i < PQntuples(res); i++)
		{
			const char *n = PQgetvalue(res, i, 0);

			has_ts |= strcmp(n, "ts") == 0;
			has_device |= strcmp(n, "device") == 0;
			has_value |= strcmp(n, "value") == 0;
		}
		PQclear(res);
		if (!has_ts || !has_device || !has_value)
			die("table %s must have the columns ts (timestamptz), device (int) and value (float8)", qtable);
	}
}

int
main(int argc, char **argv)
{
	PGconn	   *conn;
	LoadResult	lr = {0};
	bool		do_load;
	FlowResult *frs = NULL;
	int			nflows = 0;
	bool		mismatch = false, error = false;
	long long	table_rows = -1;
	Buf			out = {0};
	FILE	   *vout;

	parse_args(argc, argv);
	do_load = opt.rows > 0 || opt.duration > 0;
	vout = opt.json ? stderr : stdout;

	conn = connect_db(opt.conninfo, "flowload");
	if (PQstatus(conn) != CONNECTION_OK)
	{
		char	   *m = conn_error(conn);

		die("could not connect to the server: %s", m);
	}

	if (do_load || opt.expect_rows_set)
		resolve_table(conn);

	if (do_load)
	{
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = handle_sigint;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		run_load(&lr);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (lr.error)
		{
			fprintf(stderr, "%s: %s\n", progname, lr.error);
			error = true;
		}
		else if (stop_flag)
			fprintf(stderr, "%s: interrupted after %.3f s; the report covers the transactions done\n",
					progname, lr.elapsed);
		if (!opt.json)
		{
			double		el = lr.elapsed > 0 ? lr.elapsed : 1e-9;

			printf("method:             %s, %d client%s, %d rows per transaction\n",
				   method_names[opt.method], opt.clients, opt.clients == 1 ? "" : "s", opt.batch);
			printf("elapsed:            %.3f s\n", lr.elapsed);
			printf("rows committed:     %lld (%lld late)\n", lr.rows, lr.late_rows);
			printf("rows/s:             %.1f\n", (double) lr.rows / el);
			printf("transactions:       %lld committed, %lld aborted (%lld by deadlock or serialization failure)\n",
				   lr.committed, lr.aborted, lr.failed);
			printf("transactions/s:     %.1f (committed)\n", (double) lr.committed / el);
			printf("savepoints:         %lld rolled back\n", lr.savepoints);
			printf("rows updated:       %lld\n", lr.updated);
			printf("rows deleted:       %lld\n", lr.deleted);
			printf("latency ms:         p50 %.3f  p95 %.3f  p99 %.3f  mean %.3f  max %.3f\n",
				   lr.p50, lr.p95, lr.p99, lr.lat_mean, lr.lat_max);
			fflush(stdout);
		}
		/* After a connection loss the server may be gone: no verification. */
		if (error && PQstatus(conn) == CONNECTION_OK)
		{
			PGresult   *res = PQexec(conn, "SELECT 1");

			if (PQresultStatus(res) != PGRES_TUPLES_OK)
				opt.verify = NULL, opt.expect_rows_set = false;
			PQclear(res);
		}
	}

	if (opt.verify)
	{
		char	   *list = xstrdup(opt.verify), *save = NULL;

		for (char *p = list; *p; p++)
			nflows += *p == ',';
		nflows++;
		frs = calloc((size_t) nflows, sizeof(FlowResult));
		nflows = 0;
		for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		{
			FlowResult *fr = &frs[nflows++];

			fr->flow = tok;
			if (PQstatus(conn) != CONNECTION_OK)
				PQreset(conn);
			verify_flow(conn, fr);
			if (fr->error)
			{
				fprintf(vout, "flow %s: cannot verify: %s\n", fr->flow, fr->note);
				error = true;
			}
			else
			{
				fprintf(vout, "flow %s: %lld mismatching rows (sink %lld rows, query %lld rows)\n",
						fr->flow, fr->mismatches, fr->sink_rows, fr->query_rows);
				if (fr->examples.len)
					fputs(fr->examples.data, vout);
				if (fr->mismatches)
					mismatch = true;
			}
			fflush(vout);
		}
	}

	if (opt.expect_rows_set)
	{
		Buf			b = {0};
		PGresult   *res;

		buf_printf(&b, "SELECT pg_catalog.count(*) FROM %s", qtable);
		res = PQexec(conn, b.data);
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			char	   *m = result_error(res, conn);

			fprintf(stderr, "%s: counting the rows of %s: %s\n", progname, qtable, m);
			error = true;
		}
		else
		{
			table_rows = atoll(PQgetvalue(res, 0, 0));
			if (table_rows != opt.expect_rows)
			{
				fprintf(vout, "table %s: %lld rows, expected %lld\n", qtable, table_rows, opt.expect_rows);
				mismatch = true;
			}
			else
				fprintf(vout, "table %s: %lld rows, as expected\n", qtable, table_rows);
		}
		PQclear(res);
		free(b.data);
	}
	PQfinish(conn);

	if (opt.json)
	{
		double		el = lr.elapsed > 0 ? lr.elapsed : 1e-9;

		buf_puts(&out, "{");
		if (lr.ran)
		{
			buf_printf(&out, "\"method\":\"%s\",\"clients\":%d,\"batch\":%d,", method_names[opt.method],
					   opt.clients, opt.batch);
			buf_printf(&out, "\"elapsed_s\":%.6f,\"rows\":%lld,\"late_rows\":%lld,\"rows_per_s\":%.3f,",
					   lr.elapsed, lr.rows, lr.late_rows, (double) lr.rows / el);
			buf_printf(&out, "\"transactions\":%lld,\"transactions_per_s\":%.3f,\"aborted\":%lld,"
					   "\"failed\":%lld,\"savepoints_rolled_back\":%lld,\"rows_updated\":%lld,"
					   "\"rows_deleted\":%lld,\"rows_written\":%lld,",
					   lr.committed, (double) lr.committed / el, lr.aborted, lr.failed, lr.savepoints,
					   lr.updated, lr.deleted, lr.written);
			buf_printf(&out, "\"latency_ms\":{\"p50\":%.4f,\"p95\":%.4f,\"p99\":%.4f,\"mean\":%.4f,\"max\":%.4f},",
					   lr.p50, lr.p95, lr.p99, lr.lat_mean, lr.lat_max);
		}
		if (opt.verify)
		{
			buf_puts(&out, "\"verify\":[");
			for (int i = 0; i < nflows; i++)
			{
				FlowResult *fr = &frs[i];

				buf_puts(&out, i ? ",{\"flow\":" : "{\"flow\":");
				buf_json_string(&out, fr->flow);
				if (fr->error)
				{
					buf_puts(&out, ",\"error\":");
					buf_json_string(&out, fr->note);
				}
				else
					buf_printf(&out, ",\"mismatches\":%lld,\"only_in_sink\":%lld,\"only_in_query\":%lld,"
							   "\"sink_rows\":%lld,\"query_rows\":%lld",
							   fr->mismatches, fr->only_sink, fr->only_query, fr->sink_rows, fr->query_rows);
				buf_puts(&out, "}");
			}
			buf_puts(&out, "],");
		}
		if (opt.expect_rows_set)
			buf_printf(&out, "\"table_rows\":%lld,\"expected_rows\":%lld,", table_rows, opt.expect_rows);
		if (lr.error)
		{
			buf_puts(&out, "\"error\":");
			buf_json_string(&out, lr.error);
			buf_puts(&out, ",");
		}
		buf_printf(&out, "\"ok\":%s}", (error || mismatch) ? "false" : "true");
		puts(out.data);
		fflush(stdout);
	}
	if (error)
		return EXIT_ERROR;
	if (mismatch)
		return EXIT_MISMATCH;
	return 0;
}
