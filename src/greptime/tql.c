/*-------------------------------------------------------------------------
 *
 * tql.c
 *	  GreptimeDB's TQL flows: TQL EVAL (start, end, step [, lookback])
 *	  <PromQL> [AS name], translated into the SQL query of a recording rule.
 *
 * A TQL flow evaluates its PromQL expression at every step of
 * [start, end] (start and end call now(): the tick's time) and keeps one
 * row per series and step, the earlier ticks' rows too.  The query this
 * file writes groups by the steps, generate_series(start, end, step) in
 * FROM, which the planner takes for the tick's key (a recording rule over
 * a range of steps: each tick replaces the rows of its steps).
 *
 * The table a selector names has a time index (its one NOT NULL timestamp
 * column), one value column (double precision) and labels (its text
 * columns); a label that is no column is the empty string, as a missing
 * label in Prometheus.  Supported, with Prometheus's semantics:
 *	- selectors with =, !=, =~, !~ matchers (regular expressions anchored;
 *	  PostgreSQL's regular expressions, not RE2), __name__ and __schema__;
 *	- an instant selector: the latest sample in (T - lookback, T];
 *	- rate, irate, increase, delta, idelta (prom_range.c) and
 *	  avg/min/max/sum/count/last_over_time over a range selector, samples
 *	  in (T - range, T];
 *	- sum, avg, min, max, count, count_values with by / without;
 *	- histogram_quantile over buckets with an le label (prom_range.c);
 *	- +, -, *, / between a vector and a number, or two vectors of the same
 *	  labels (one to one).
 * Everything else is refused, naming it.  Series whose value is NULL (a
 * rate of one sample) give no row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "dialect.h"
#include "tql.h"

typedef struct TqlParser
{
	const char *text;
	int			pos;
	const char *start;			/* TQL EVAL's parameters, SQL */
	const char *end;
	const char *step;
	const char *lookback;
} TqlParser;

/* A vector: a query with columns ts, the labels and v, one row per series and step. */
typedef struct Vec
{
	char	   *value;			/* the value's expression over the FROM below */
	char	   *steps;			/* generate_series(...) AS s(ts) */
	char	   *from;			/* FROM ..., the steps first */
	List	   *labels;			/* label columns (String), as the output names them */
	List	   *label_exprs;	/* their expressions */
	char	   *name;			/* GreptimeDB's name of the value */
	char	   *table;			/* the table read, for names */
	char	   *time_column;
	Oid			time_type;
	bool		aggregated;		/* value is an aggregate over the FROM */
	bool		selector;		/* a plain selector: its name is table.column in GreptimeDB's */
} Vec;

static Vec *parse_expr(TqlParser *p);

/* the text of the last range selector's duration, for names */
static char *last_range_text = NULL;

/* A duration's milliseconds, as GreptimeDB names a range (5m: 300000). */
static int64
duration_ms(const char *text)
{
	Interval   *span = DatumGetIntervalP(DirectFunctionCall3(interval_in, CStringGetDatum(text),
															  ObjectIdGetDatum(InvalidOid),
															  Int32GetDatum(-1)));

	return (span->time + (int64) span->day * USECS_PER_DAY) / 1000;
}

static void
tql_error(TqlParser *p, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_SYNTAX_ERROR),
			 errmsg("invalid TQL: %s", what),
			 errdetail("At: %.40s", p->text + p->pos)));
}

static void
refuse(const char *what, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("TQL flows do not support %s yet", what),
			 hint ? errhint("%s", hint) : 0));
}

static void
skip_space(TqlParser *p)
{
	while (p->text[p->pos] && isspace((unsigned char) p->text[p->pos]))
		p->pos++;
}

static bool
accept(TqlParser *p, const char *s)
{
	skip_space(p);
	if (strncmp(p->text + p->pos, s, strlen(s)) == 0)
	{
		p->pos += strlen(s);
		return true;
	}
	return false;
}

static void
expect(TqlParser *p, const char *s)
{
	if (!accept(p, s))
		tql_error(p, psprintf("expected \"%s\"", s));
}

static char *
identifier(TqlParser *p)
{
	int			start;

	skip_space(p);
	start = p->pos;
	while (isalnum((unsigned char) p->text[p->pos]) || p->text[p->pos] == '_' ||
		   p->text[p->pos] == ':')
		p->pos++;
	return p->pos > start ? pnstrdup(p->text + start, p->pos - start) : NULL;
}

static bool
accept_word(TqlParser *p, const char *word)
{
	int			save = p->pos;
	char	   *w = identifier(p);

	if (w && pg_strcasecmp(w, word) == 0)
		return true;
	p->pos = save;
	return false;
}

/* A quoted string ("..." or '...'), backslash escapes kept simple. */
static char *
string_literal(TqlParser *p)
{
	char		quote;
	StringInfoData buf;

	skip_space(p);
	quote = p->text[p->pos];
	if (quote != '"' && quote != '\'')
		return NULL;
	p->pos++;
	initStringInfo(&buf);
	while (p->text[p->pos] && p->text[p->pos] != quote)
	{
		if (p->text[p->pos] == '\\' && p->text[p->pos + 1])
			p->pos++;
		appendStringInfoChar(&buf, p->text[p->pos++]);
	}
	if (!p->text[p->pos])
		tql_error(p, "unterminated string");
	p->pos++;
	return buf.data;
}

/* One SQL argument of TQL EVAL: up to a comma or parenthesis at depth 0. */
static char *
sql_argument(TqlParser *p)
{
	int			depth = 0;
	int			start;
	char		quote = 0;

	skip_space(p);
	start = p->pos;
	for (; p->text[p->pos]; p->pos++)
	{
		char		c = p->text[p->pos];

		if (quote)
		{
			if (c == quote)
				quote = 0;
			continue;
		}
		if (c == '\'' || c == '"')
			quote = c;
		else if (c == '(')
			depth++;
		else if (c == ')' && depth-- == 0)
			break;
		else if (c == ',' && depth == 0)
			break;
	}
	if (p->pos == start)
		tql_error(p, "an argument of TQL EVAL is missing");
	return pnstrdup(p->text + start, p->pos - start);
}

/* A duration ('5m', 5m, '30s', or a number of seconds) as an SQL interval. */
static char *
duration(TqlParser *p, const char *text)
{
	char	   *t = pstrdup(text);
	char	   *end;
	int			len = strlen(t);

	while (len > 0 && isspace((unsigned char) t[len - 1]))
		t[--len] = '\0';
	while (*t && isspace((unsigned char) *t))
		t++;
	if (*t == '\'' || *t == '"')
	{
		t++;
		t[strlen(t) - 1] = '\0';
	}
	(void) strtod(t, &end);
	if (*end == '\0' && end != t)
		return psprintf("make_interval(secs => %s)", t);
	/* PostgreSQL's interval reads 5m, 30s, 1h, 1d, 1w */
	return psprintf("CAST(%s AS interval)", quote_literal_cstr(t));
}

typedef struct Table
{
	char	   *qualified;
	char	   *name;
	char	   *time_column;
	Oid			time_type;
	int32		time_typmod;
	char	   *value_column;
	List	   *labels;			/* text columns, String */
} Table;

static Table *
resolve_table(const char *schema, const char *name)
{
	Oid			relid = RangeVarGetRelid(makeRangeVar(schema ? pstrdup(schema) : NULL, pstrdup(name), -1),
										 AccessShareLock, true);
	Table	   *t = palloc0(sizeof(Table));
	Relation	rel;
	TupleDesc	desc;
	int			values = 0;
	StringInfoData value_names;

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the table of metric \"%s\" does not exist", name)));
	rel = table_open(relid, AccessShareLock);
	desc = RelationGetDescr(rel);
	initStringInfo(&value_names);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, i);
		Oid			type = getBaseType(attr->atttypid);

		if (attr->attisdropped)
			continue;
		if ((type == TIMESTAMPOID || type == TIMESTAMPTZOID) && attr->attnotnull &&
			t->time_column == NULL)
		{
			t->time_column = pstrdup(NameStr(attr->attname));
			t->time_type = attr->atttypid;
			t->time_typmod = attr->atttypmod;
		}
		else if (type == FLOAT8OID)
		{
			t->value_column = pstrdup(NameStr(attr->attname));
			appendStringInfo(&value_names, "%s%s", values++ ? ", " : "", NameStr(attr->attname));
		}
		else if (type == TEXTOID || type == VARCHAROID || type == BPCHAROID)
			t->labels = lappend(t->labels, makeString(pstrdup(NameStr(attr->attname))));
	}
	t->name = pstrdup(RelationGetRelationName(rel));
	t->qualified = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)), t->name);
	table_close(rel, AccessShareLock);
	if (t->time_column == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("TQL query needs a time index: table \"%s\" has no NOT NULL timestamp column", name)));
	if (values != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("TQL query only supports one f64 value column, table \"%s\" has %d f64 value columns%s%s",
						name, values, values ? ": " : "", value_names.data)));
	return t;
}

/* A matcher's condition on the table's label (or '' for a label it lacks). */
static char *
matcher_sql(Table *t, const char *label, const char *op, const char *value)
{
	char	   *column = list_member(t->labels, makeString((char *) label)) ?
		psprintf("coalesce(t.%s, '')", quote_identifier(label)) : pstrdup("''");
	char	   *literal = quote_literal_cstr(value);

	if (strcmp(op, "=") == 0)
		return psprintf("%s = %s", column, literal);
	if (strcmp(op, "!=") == 0)
		return psprintf("%s <> %s", column, literal);
	if (strcmp(op, "=~") == 0)
		return psprintf("%s ~ ('^(?:' || %s || ')$')", column, literal);
	return psprintf("%s !~ ('^(?:' || %s || ')$')", column, literal);
}

/* The type of an SQL expression of TQL EVAL, by PostgreSQL's analysis; it must call now(). */
static Oid
expression_type(const char *expr)
{
	Node	   *analyzed;
	char	   *sql = psprintf("SELECT (%s)", expr);
	List	   *raw = raw_parser(sql, RAW_PARSE_DEFAULT);
	Query	   *query;

	if (list_length(raw) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("invalid TQL: \"%s\" is not one expression", expr)));
	/* GreptimeDB's dialect, as in the flow's query (date_bin of two arguments) */
	(void) dialect_rewrite_raw((SelectStmt *) linitial_node(RawStmt, raw)->stmt, sql, false, false);
	query = parse_analyze_fixedparams(linitial_node(RawStmt, raw), sql, NULL, 0, NULL);
	analyzed = (Node *) linitial_node(TargetEntry, query->targetList)->expr;
	/* the tick's time; a constant range would be evaluated once, at every tick */
	if (!contain_mutable_functions(analyzed))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid TQL: expected an expression containing now(), but have \"%s\"", expr),
				 errdetail("A TQL flow's range moves with its ticks: start and end are relative to now()."),
				 errhint("Write now() - '1m'::interval, now().")));
	return exprType(analyzed);
}

/*
 * A start or end of TQL EVAL as a time of the table's type: a timestamp,
 * or a duration since the epoch (GreptimeDB's now() - now() is 0).
 */
static char *
step_time(const char *expr, const char *type)
{
	if (expression_type(expr) == INTERVALOID)
	{
		bool		negative;

		/* a duration before the epoch is no time (GreptimeDB refuses it too) */
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		if (SPI_execute(psprintf("SELECT (%s) < interval '0'", expr), true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not evaluate \"%s\"", expr);
		negative = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
											  &(bool){false}));
		SPI_finish();
		if (negative)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid TQL: \"%s\" is a negative duration", expr),
					 errdetail("A duration stands for the time that long after the epoch.")));
		return psprintf("CAST(CAST('epoch' AS %s) + (%s) AS %s)", type, expr, type);
	}
	return psprintf("CAST((%s) AS %s)", expr, type);
}

static char *
steps_sql(TqlParser *p, Table *t)
{
	/* the table's typmod: steps that fit a timestamp(3) time index */
	char	   *type = format_type_with_typemod(t->time_type, t->time_typmod);

	return psprintf("generate_series(%s, %s, %s) AS s(ts)",
					step_time(p->start, type), step_time(p->end, type), duration(p, p->step));
}

/* selector [range]: its table, conditions and range (NULL: instant). */
static Vec *
parse_selector(TqlParser *p, char *metric, const char **range_out)
{
	char	   *schema = NULL;
	List	   *conditions = NIL;
	List	   *matchers = NIL;	/* triples label, op, value */
	Table	   *t;
	Vec		   *v = palloc0(sizeof(Vec));
	StringInfoData from;
	ListCell   *lc;

	if (accept(p, "{"))
	{
		while (!accept(p, "}"))
		{
			char	   *label = identifier(p);
			const char *op;
			char	   *value;

			if (label == NULL)
				tql_error(p, "expected a label name");
			skip_space(p);
			op = accept(p, "=~") ? "=~" : accept(p, "!~") ? "!~" : accept(p, "!=") ? "!=" :
				accept(p, "=") ? "=" : NULL;
			if (op == NULL)
				tql_error(p, "expected =, !=, =~ or !~");
			value = string_literal(p);
			if (value == NULL)
				tql_error(p, "expected a quoted label value");
			if (strcmp(label, "__name__") == 0 || strcmp(label, "__schema__") == 0 ||
				strcmp(label, "__database__") == 0)
			{
				if (strcmp(op, "=") != 0)
					refuse(psprintf("%s %s", label, op), "Name the metric's table with =.");
				if (strcmp(label, "__name__") == 0)
					metric = value;
				else
					schema = value;
			}
			else
				matchers = lappend(matchers, list_make3(makeString(label), makeString((char *) op),
														makeString(value)));
			(void) accept(p, ",");
		}
	}
	if (metric == NULL)
		tql_error(p, "a selector needs a metric name");
	t = resolve_table(schema, metric);
	foreach(lc, matchers)
	{
		List	   *m = lfirst(lc);

		conditions = lappend(conditions, matcher_sql(t, strVal(linitial(m)), strVal(lsecond(m)),
													  strVal(lthird(m))));
	}
	*range_out = NULL;
	if (accept(p, "["))
	{
		int			start = p->pos;

		while (p->text[p->pos] && p->text[p->pos] != ']')
			p->pos++;
		last_range_text = pnstrdup(p->text + start, p->pos - start);
		*range_out = duration(p, last_range_text);
		expect(p, "]");
	}
	skip_space(p);
	if (accept_word(p, "offset") || p->text[p->pos] == '@')
		refuse("offset and @ modifiers", NULL);

	v->steps = steps_sql(p, t);
	initStringInfo(&from);
	appendStringInfo(&from, "%s JOIN %s AS t ON t.%s > s.ts - %s AND t.%s <= s.ts",
					 v->steps, t->qualified, quote_identifier(t->time_column),
					 *range_out ? *range_out : p->lookback, quote_identifier(t->time_column));
	foreach(lc, conditions)
		appendStringInfo(&from, " AND %s", (char *) lfirst(lc));
	v->from = from.data;
	foreach(lc, t->labels)
	{
		v->labels = lappend(v->labels, lfirst(lc));
		v->label_exprs = lappend(v->label_exprs,
								 psprintf("t.%s", quote_identifier(strVal(lfirst(lc)))));
	}
	v->value = psprintf("flowpg.last_value_by(t.%s, t.%s)", quote_identifier(t->value_column),
						quote_identifier(t->time_column));
	v->name = t->value_column;
	v->selector = true;
	v->table = t->name;
	v->time_column = t->time_column;
	v->time_type = t->time_type;
	v->aggregated = true;
	return v;
}

/*
 * The query of a vector: its value named value_name, the step ts_name, its
 * labels; one row per series and step, grouped by the steps.
 */
static char *
vec_query_named(Vec *v, const char *value_name, const char *ts_name)
{
	StringInfoData buf;
	ListCell   *lc;
	ListCell   *ec;

	initStringInfo(&buf);
	appendStringInfo(&buf, "SELECT %s AS %s, s.ts AS %s", v->value, quote_identifier(value_name),
					 quote_identifier(ts_name));
	forboth(lc, v->labels, ec, v->label_exprs)
		appendStringInfo(&buf, ", %s AS %s", (char *) lfirst(ec), quote_identifier(strVal(lfirst(lc))));
	appendStringInfo(&buf, " FROM %s GROUP BY s.ts", v->from);
	foreach(ec, v->label_exprs)
		appendStringInfo(&buf, ", %s", (char *) lfirst(ec));
	appendStringInfo(&buf, " HAVING (%s) IS NOT NULL", v->value);
	return buf.data;
}

static char *
vec_query(Vec *v)
{
	return vec_query_named(v, "v", "ts");
}

static const struct
{
	const char *name;
	const char *sql;			/* {t} time, {v} value, {s} range start, {e} range end,
								 * {q} a leading number argument */
	bool		named_range;	/* GreptimeDB's name has the range */
}			range_functions[] =
{
	{"rate", "flowpg.prom_rate({t}, {v}, {s}, {e})", true},
	{"increase", "flowpg.prom_increase({t}, {v}, {s}, {e})", true},
	{"delta", "flowpg.prom_delta({t}, {v}, {s}, {e})", true},
	{"irate", "flowpg.prom_irate({t}, {v})", false},
	{"idelta", "flowpg.prom_idelta({t}, {v})", false},
	{"avg_over_time", "avg({v})", false},
	{"min_over_time", "min({v})", false},
	{"max_over_time", "max({v})", false},
	{"sum_over_time", "sum({v})", false},
	{"count_over_time", "count({v})::float8", false},
	{"last_over_time", "flowpg.last_value_by({v}, {t})", false},
	{"stddev_over_time", "stddev_pop({v})", false},
	{"stdvar_over_time", "var_pop({v})", false},
	{"present_over_time", "(CASE WHEN count(*) > 0 THEN 1 END)::float8", false},
	{"quantile_over_time", "percentile_cont({q}) WITHIN GROUP (ORDER BY {v})", false},
};

/* A range function's SQL: its placeholders {t}, {v}, {s}, {e}, {q} filled. */
static char *
fill_template(const char *template, const char *time, const char *value, const char *start,
			  const char *end, const char *number)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (const char *c = template; *c; c++)
	{
		const char *with = NULL;

		if (c[0] == '{' && c[1] && c[2] == '}')
			with = c[1] == 't' ? time : c[1] == 'v' ? value : c[1] == 's' ? start :
				c[1] == 'e' ? end : c[1] == 'q' ? number : NULL;
		if (with)
		{
			appendStringInfoString(&buf, with);
			c += 2;
		}
		else
			appendStringInfoChar(&buf, *c);
	}
	return buf.data;
}

static const char *const aggregations[] = {"sum", "avg", "min", "max", "count", "count_values"};

/* op by|without (labels) (expr), or op (expr) by|without (labels) */
static Vec *
parse_aggregation(TqlParser *p, const char *op)
{
	List	   *grouping = NIL;
	bool		without = false;
	bool		has_grouping = false;
	char	   *label = NULL;
	Vec		   *inner = NULL;
	Vec		   *v = palloc0(sizeof(Vec));
	ListCell   *lc;

	for (int pass = 0; pass < 2; pass++)
	{
		bool		by;
		bool		but;

		if (pass == 1)
		{
			expect(p, "(");
			if (strcmp(op, "count_values") == 0)
			{
				label = string_literal(p);
				if (label == NULL)
					tql_error(p, "count_values takes a label name first");
				expect(p, ",");
			}
			inner = parse_expr(p);
			expect(p, ")");
		}
		by = accept_word(p, "by");
		but = !by && accept_word(p, "without");
		if (by || but)
		{
			if (has_grouping)
				tql_error(p, "by or without is given twice");
			without = but;
			has_grouping = true;
			expect(p, "(");
			while (!accept(p, ")"))
			{
				char	   *l = identifier(p);

				if (l == NULL)
					tql_error(p, "expected a label name");
				grouping = lappend(grouping, makeString(l));
				(void) accept(p, ",");
			}
		}
	}
	foreach(lc, inner->labels)
	{
		bool		listed = list_member(grouping, lfirst(lc));

		if (has_grouping && (without ? !listed : listed))
		{
			v->labels = lappend(v->labels, lfirst(lc));
			v->label_exprs = lappend(v->label_exprs,
									 psprintf("x.%s", quote_identifier(strVal(lfirst(lc)))));
		}
	}
	/* by a label the series lack: the empty string, one group */
	if (!without)
		foreach(lc, grouping)
			if (!list_member(inner->labels, lfirst(lc)))
				refuse(psprintf("grouping by \"%s\", which is no column of the table", strVal(lfirst(lc))), NULL);
	/* the steps again at this level: the tick's key where this is the top */
	v->steps = inner->steps;
	v->from = psprintf("%s JOIN (%s) AS x ON x.ts = s.ts", inner->steps, vec_query(inner));
	if (strcmp(op, "count_values") == 0)
	{
		/* GreptimeDB's text of a number: 200.0 */
		char	   *text = "CASE WHEN x.v = trunc(x.v) AND abs(x.v) < 1e15 THEN (x.v::numeric)::text || '.0' ELSE x.v::text END";

		v->labels = lappend(v->labels, makeString(label));
		v->label_exprs = lappend(v->label_exprs, text);
		v->value = "count(*)::float8";
		v->name = inner->selector ? psprintf("count(%s.%s)", inner->table, inner->name) :
			psprintf("count(%s)", inner->name);
	}
	else
	{
		v->value = strcmp(op, "count") == 0 ? "count(x.v)::float8" : psprintf("%s(x.v)", op);
		v->name = inner->selector ? psprintf("%s(%s.%s)", op, inner->table, inner->name) :
			psprintf("%s(%s)", op, inner->name);
	}
	v->table = inner->table;
	v->time_column = inner->time_column;
	v->time_type = inner->time_type;
	v->aggregated = true;
	return v;
}

static double number(TqlParser *p, bool *found);

/* histogram_quantile(q, buckets): per group of the series but for le */
static Vec *
parse_histogram_quantile(TqlParser *p)
{
	Vec		   *inner;
	Vec		   *v = palloc0(sizeof(Vec));
	bool		found;
	double		q;
	ListCell   *lc;

	expect(p, "(");
	q = number(p, &found);
	if (!found)
		refuse("a quantile that is not a number", NULL);
	expect(p, ",");
	inner = parse_expr(p);
	expect(p, ")");
	if (!list_member(inner->labels, makeString("le")))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("histogram_quantile needs buckets with an le label"),
				 errdetail("Table \"%s\" has no text column le.", inner->table)));
	foreach(lc, inner->labels)
		if (strcmp(strVal(lfirst(lc)), "le") != 0)
		{
			v->labels = lappend(v->labels, lfirst(lc));
			v->label_exprs = lappend(v->label_exprs,
									 psprintf("x.%s", quote_identifier(strVal(lfirst(lc)))));
		}
	v->steps = inner->steps;
	v->from = psprintf("%s JOIN (%s) AS x ON x.ts = s.ts", inner->steps, vec_query(inner));
	v->value = psprintf("flowpg.prom_histogram_quantile(%.17g, x.le, x.v)", q);
	v->name = "histogram_quantile";
	v->table = inner->table;
	v->time_column = inner->time_column;
	v->time_type = inner->time_type;
	v->aggregated = true;
	return v;
}

static double
number(TqlParser *p, bool *found)
{
	char	   *end;
	double		n;

	skip_space(p);
	n = strtod(p->text + p->pos, &end);
	*found = end != p->text + p->pos && !isalpha((unsigned char) p->text[p->pos]);
	if (*found)
		p->pos = end - p->text;
	return n;
}

static Vec *
parse_primary(TqlParser *p)
{
	char	   *word;
	int			save;

	if (accept(p, "("))
	{
		Vec		   *v = parse_expr(p);

		expect(p, ")");
		return v;
	}
	if (accept(p, "{"))
	{
		const char *range;

		p->pos--;
		return parse_selector(p, NULL, &range);
	}
	save = p->pos;
	word = identifier(p);
	if (word == NULL)
		tql_error(p, "expected a selector, a function or an aggregation");
	for (int i = 0; i < lengthof(aggregations); i++)
		if (strcmp(word, aggregations[i]) == 0)
			return parse_aggregation(p, word);
	if (strcmp(word, "histogram_quantile") == 0)
		return parse_histogram_quantile(p);
	for (int i = 0; i < lengthof(range_functions); i++)
		if (strcmp(word, range_functions[i].name) == 0)
		{
			const char *range;
			char	   *metric;
			Vec		   *v;
			char	   *time;
			char	   *range_text;
			double		quantile = 0;

			expect(p, "(");
			if (strcmp(word, "quantile_over_time") == 0)
			{
				bool		found;

				quantile = number(p, &found);
				if (!found)
					refuse("a quantile that is not a number", NULL);
				expect(p, ",");
			}
			metric = identifier(p);
			v = parse_selector(p, metric, &range);
			range_text = last_range_text;
			if (range == NULL)
				tql_error(p, psprintf("%s takes a range selector, such as x[5m]", word));
			expect(p, ")");
			time = psprintf("t.%s", quote_identifier(v->time_column));
			v->value = fill_template(range_functions[i].sql,
									 psprintf("%s::timestamptz", time),
									 psprintf("t.%s", quote_identifier(v->name)),
									 psprintf("(s.ts - %s)::timestamptz", range), "s.ts::timestamptz",
									 psprintf("%.17g", quantile));
			/* GreptimeDB's names: prom_rate(ts_range,val,ts,Int64(300000)) */
			v->name = range_functions[i].named_range ?
				psprintf("prom_%s(%s_range,%s,%s,Int64(" INT64_FORMAT "))", word, v->time_column,
						 v->name, v->time_column, duration_ms(range_text)) :
				psprintf("prom_%s(%s_range,%s)", word, v->time_column, v->name);
			v->selector = false;
			return v;
		}
	skip_space(p);
	if (p->text[p->pos] == '(')
		refuse(psprintf("the function %s", word), NULL);
	p->pos = save;
	{
		const char *range;
		char	   *metric = identifier(p);
		Vec		   *v = parse_selector(p, metric, &range);

		if (range)
			refuse("a range vector as a result", "Apply a function such as rate() to it.");
		return v;
	}
}

/*
 * left op right between two vectors: one to one, on series of the same
 * labels (Prometheus's default matching when both sides have the same
 * label names); on, ignoring and group modifiers are not there yet.
 */
static Vec *
vector_operation(Vec *left, const char *op, Vec *right)
{
	Vec		   *v = palloc0(sizeof(Vec));
	StringInfoData join;
	ListCell   *lc;

	if (list_length(left->labels) != list_length(right->labels))
		refuse("operators between vectors of different labels",
			   "Aggregate both sides by the same labels (sum by (a) (x) / count by (a) (x)).");
	foreach(lc, left->labels)
		if (!list_member(right->labels, lfirst(lc)))
			refuse("operators between vectors of different labels",
				   "Aggregate both sides by the same labels (sum by (a) (x) / count by (a) (x)).");
	initStringInfo(&join);
	appendStringInfo(&join, "%s JOIN (%s) AS l ON l.ts = s.ts JOIN (%s) AS r ON r.ts = s.ts",
					 left->steps, vec_query(left), vec_query(right));
	foreach(lc, left->labels)
	{
		const char *label = quote_identifier(strVal(lfirst(lc)));

		appendStringInfo(&join, " AND l.%s IS NOT DISTINCT FROM r.%s", label, label);
		v->labels = lappend(v->labels, lfirst(lc));
		v->label_exprs = lappend(v->label_exprs, psprintf("l.%s", label));
	}
	v->steps = left->steps;
	v->from = join.data;
	/* one row a side per series and step: max() is that row's value */
	if (strcmp(op, "/") == 0)
		v->value = "(CASE WHEN max(r.v) = 0 THEN (CASE WHEN max(l.v) > 0 THEN 'Infinity' WHEN max(l.v) < 0 THEN '-Infinity' ELSE 'NaN' END)::float8 ELSE max(l.v) / max(r.v) END)";
	else
		v->value = psprintf("(max(l.v) %s max(r.v))", op);
	v->name = psprintf("%s %s %s", left->name, op, right->name);
	v->table = left->table;
	v->time_column = left->time_column;
	v->time_type = left->time_type;
	v->aggregated = true;
	return v;
}

/* v op n, a number on the right */
static void
number_operation(Vec *v, const char *op, double n)
{
	if (strcmp(op, "/") == 0 && n == 0)
		v->value = psprintf("(CASE WHEN (%s) > 0 THEN 'Infinity' WHEN (%s) < 0 THEN '-Infinity' ELSE 'NaN' END)::float8",
							v->value, v->value);
	else
		v->value = psprintf("((%s) %s %.17g)", v->value, op, n);
}

/* operands of * and / (tighter than + and -, as in PromQL) */
static Vec *
parse_term(TqlParser *p)
{
	bool		found;
	double		left_number = number(p, &found);
	Vec		   *v;

	if (found)
	{
		const char *op = accept(p, "*") ? "*" : accept(p, "+") ? "+" : NULL;

		if (op == NULL)
			refuse("a number on the left of /, - or an operator with no vector", NULL);
		v = parse_primary(p);
		v->value = psprintf("(%.17g %s %s)", left_number, op, v->value);
		return v;
	}
	v = parse_primary(p);
	for (;;)
	{
		const char *op;
		double		n;

		skip_space(p);
		op = accept(p, "*") ? "*" : accept(p, "/") ? "/" : NULL;
		if (op == NULL)
			return v;
		n = number(p, &found);
		if (found)
			number_operation(v, op, n);
		else
			v = vector_operation(v, op, parse_primary(p));
	}
}

static Vec *
parse_expr(TqlParser *p)
{
	Vec		   *v = parse_term(p);

	for (;;)
	{
		const char *op;
		bool		found;
		double		n;
		int			save;

		skip_space(p);
		op = accept(p, "+") ? "+" : accept(p, "-") ? "-" : NULL;
		if (op == NULL)
			return v;
		save = p->pos;
		n = number(p, &found);
		skip_space(p);
		/* a number alone (not the start of n * x) */
		if (found && p->text[p->pos] != '*' && p->text[p->pos] != '/')
			number_operation(v, op, n);
		else
		{
			p->pos = save;
			v = vector_operation(v, op, parse_term(p));
		}
	}
}

char *
tql_translate(const char *tql, List *columns, char **name)
{
	TqlParser	p = {tql, 0};
	Vec		   *v;
	char	   *alias = NULL;

	if (!accept_word(&p, "tql") || !(accept_word(&p, "eval") || accept_word(&p, "evaluate")))
		tql_error(&p, "expected TQL EVAL");
	expect(&p, "(");
	p.start = sql_argument(&p);
	expect(&p, ",");
	p.end = sql_argument(&p);
	expect(&p, ",");
	p.step = sql_argument(&p);
	p.lookback = "interval '5 minutes'";
	if (accept(&p, ","))
		p.lookback = duration(&p, sql_argument(&p));
	expect(&p, ")");
	v = parse_expr(&p);
	if (accept_word(&p, "as"))
	{
		alias = identifier(&p);
		if (alias == NULL)
			alias = string_literal(&p);
		if (alias == NULL)
			tql_error(&p, "expected a name after AS");
	}
	skip_space(&p);
	while (p.text[p.pos] == ';' || isspace((unsigned char) p.text[p.pos]))
		p.pos++;
	if (p.text[p.pos])
		tql_error(&p, "unexpected text after the expression");

	/* a CTE's columns: the time, the value, the labels */
	if (columns != NIL)
	{
		ListCell   *lc;
		int			i = 0;

		if (list_length(columns) > 2 + list_length(v->labels))
			ereport(ERROR,
					(errcode(ERRCODE_SYNTAX_ERROR),
					 errmsg("the TQL CTE names %d columns, but its TQL has %d",
							list_length(columns), 2 + list_length(v->labels))));
		foreach(lc, columns)
		{
			if (i == 0)
				v->time_column = strVal(lfirst(lc));
			else if (i == 1)
				alias = strVal(lfirst(lc));
			else
				lfirst(list_nth_cell(v->labels, i - 2)) = lfirst(lc);
			i++;
		}
	}
	/* the top level groups by the tick's steps: its key */
	*name = alias ? alias : v->name;
	return vec_query_named(v, *name, v->time_column);
}
