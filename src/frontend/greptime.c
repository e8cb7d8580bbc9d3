/*-------------------------------------------------------------------------
 *
 * greptime.c
 *	  GreptimeDB's flow statements, through flowpg.execute(statement).
 *
 * The statement is split into tokens by PostgreSQL's own SQL scanner (so
 * comments, quoting and whitespace are PostgreSQL's) and parsed by
 * recursive descent:
 *
 *	CREATE [OR REPLACE] FLOW [IF NOT EXISTS] name SINK TO table | 'table'
 *		[EXPIRE AFTER interval] [EVAL INTERVAL interval] [COMMENT 'text']
 *		[WITH (option = value, ...)] AS query
 *	DROP FLOW [IF EXISTS] name
 *	SHOW FLOWS [LIKE 'pattern' | "pattern"] | SHOW CREATE FLOW name
 *	SHOW FLOW STATUS [LIKE 'pattern'] | ADMIN FLUSH_FLOW('name')
 *	COMMENT ON FLOW name IS 'text' | NULL
 *
 * and mapped onto the native API (flow_api.c); a query that is TQL (AS TQL
 * EVAL ...) is refused as not supported yet.  A text may hold several
 * statements separated by ";" (a CREATE FLOW's query ends at the next one),
 * run in order; each returns rows of (flow_name, result, affected_rows).  A flow whose source tables do not
 * exist yet is refused, or with defer_on_missing_source kept pending
 * (pending_flow.c) and created, as its owner under the settings it was
 * created with, when a table is created (flowpg_start_pending_flows, an
 * event trigger).
 *
 * Inside the query, the few GreptimeDB spellings that PostgreSQL cannot
 * even parse are fixed on the scanner's tokens, keeping every position:
 * `backquoted` names, a comma before FROM, AS 'alias' and
 * current_timestamp().  Everything else of the dialect is done on the
 * parse trees (dialect.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/extension.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parser.h"
#include "parser/scanner.h"
#include "parser/gram.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "batch.h"
#include "catalog.h"
#include "flow_locks.h"
#include "privileged.h"
#include "flow_api.h"
#include "greptime.h"
#include "pending_flow.h"
#include "pool.h"
#include "planner.h"
#include "settings.h"
#include "subxact.h"

PG_FUNCTION_INFO_V1(flowpg_execute);
PG_FUNCTION_INFO_V1(flowpg_start_pending_flows);

/* The scanner is asked to know no keywords: every word is an IDENT. */
static const ScanKeywordList no_keywords = {"", NULL, NULL, 0, 0};
static const uint16 no_keyword_tokens[1] = {0};

typedef enum TokenKind
{
	TOK_END,
	TOK_WORD,					/* an unquoted name, downcased */
	TOK_QUOTED,					/* a "quoted" name */
	TOK_STRING,					/* 'a string', its value */
	TOK_NUMBER,
	TOK_TYPECAST,				/* :: */
	TOK_CHAR,					/* ( ) , = . ; and other single characters */
	TOK_OTHER					/* operators, parameters, bit strings */
} TokenKind;

typedef struct Token
{
	TokenKind	kind;
	char	   *value;
	char		ch;				/* TOK_CHAR */
	int			start;			/* byte offset in the statement */
} Token;

typedef struct Parser
{
	const char *statement;		/* as given: errors point into it */
	char	   *text;			/* the same, with the query's fixes */
	Token	   *tokens;
	int			ntokens;
	int			pos;
	int			error_at;		/* byte offset for errors without a position, or -1 */
	int			query_offset;	/* characters before the text positions count from */
	int			statement_first;	/* the token the statement being parsed starts at */
	ErrorContextCallback positions; /* statement_error_callback, while pushed */
} Parser;

typedef enum StatementKind
{
	STMT_CREATE,
	STMT_DROP,
	STMT_SHOW_FLOWS,
	STMT_SHOW_CREATE,
	STMT_SHOW_STATUS,
	STMT_FLUSH,
	STMT_COMMENT
} StatementKind;

typedef struct FlowStatement
{
	StatementKind kind;
	char	   *flow_name;
	bool		or_replace;
	bool		if_not_exists;
	bool		if_exists;
	char	   *sink_name;		/* quoted, schema-qualified when given so */
	Interval   *expire_after;
	Interval   *eval_interval;
	char	   *comment;		/* COMMENT, COMMENT ON FLOW (NULL: none) */
	char	   *pattern;		/* LIKE */
	/* WITH */
	bool		defer_on_missing_source;
	char	   *mode;
	bool		backfill;
	char	   *with_json;		/* the options as given, for flow_definition */
	/* AS */
	int			stmt_start;		/* byte offsets in the text */
	int			stmt_end;
	int			query_start;
	int			query_end;
	ArrayType  *pinned_settings;	/* a pending flow's, when it starts */
} FlowStatement;

#define STATEMENT_KINDS "CREATE FLOW, DROP FLOW, SHOW FLOWS, SHOW CREATE FLOW, SHOW FLOW STATUS, ADMIN FLUSH_FLOW or COMMENT ON FLOW"

/* Errors point into the statement (like PL/pgSQL's into its function). */
static void
statement_error_callback(void *arg)
{
	Parser	   *p = (Parser *) arg;
	int			position = geterrposition();

	if (position > 0)
	{
		errposition(0);
		internalerrposition(position + p->query_offset);
		internalerrquery(p->statement);
	}
	else if (p->error_at >= 0 && getinternalerrposition() == 0)
	{
		internalerrposition(pg_mbstrlen_with_len(p->statement, p->error_at) + 1);
		internalerrquery(p->statement);
	}
}

/* Errors of the parse, and of the query's raw parse, point into the statement. */
static void
positions_push(Parser *p)
{
	p->positions.callback = statement_error_callback;
	p->positions.arg = p;
	p->positions.previous = error_context_stack;
	error_context_stack = &p->positions;
}

static void
positions_pop(Parser *p)
{
	error_context_stack = p->positions.previous;
}

/*
 * Is the word after "as", "tql" the start of TQL's text (AS TQL EVAL ...)?
 * What follows is PromQL, which PostgreSQL's scanner cannot read ('5m' is
 * no SQL token): the scans stop there, and the parser refuses the flow.
 */
static bool
starts_tql_text(const char *before_before, const char *before, const char *word)
{
	return before_before && before && strcmp(before_before, "as") == 0 &&
		strcmp(before, "tql") == 0 &&
		(strcmp(word, "eval") == 0 || strcmp(word, "evaluate") == 0);
}

/* `name`: "name", in place; false when there is none. */
static bool
fix_backquotes(char *text)
{
	core_yy_extra_type extra;
	core_yyscan_t scanner = scanner_init(text, &extra, &no_keywords, no_keyword_tokens);
	core_YYSTYPE lval;
	int			loc;
	int			tok;
	bool		fixed = false;
	const char *words[2] = {NULL, NULL};	/* the two tokens before, when words */

	/* ` is an operator character to PostgreSQL's scanner */
	while ((tok = core_yylex(&lval, &loc, scanner)) != 0)
	{
		if (tok == IDENT && starts_tql_text(words[0], words[1], lval.str))
			break;
		words[0] = words[1];
		words[1] = tok == IDENT ? lval.str : NULL;
		if (tok == Op && strchr(lval.str, '`') != NULL)
		{
			char	   *open = text + loc + (strchr(lval.str, '`') - lval.str);
			char	   *close = strchr(open + 1, '`');

			if (close == NULL)
				break;			/* the parser reports it */
			*open = '"';
			*close = '"';
			fixed = true;
			break;				/* scan again: what follows changed meaning */
		}
	}
	scanner_finish(scanner);
	return fixed;
}

/*
 * CREATE FLOW ... AS TQL EVAL (...): a PromQL flow, which flowpg does not
 * run yet.  Said before the TQL text meets PostgreSQL's scanner or
 * parser ('5s' is no SQL token).
 */
static void
refuse_tql(Parser *p, Token *t)
{
	p->error_at = t->start;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("TQL flows are not supported yet"),
			 errdetail("flowpg runs flows whose query is SQL; TQL EVAL (PromQL) is not translated."),
			 errhint("Write the flow's query in SQL.")));
}

static bool
is_tql_start(Parser *p, int i)
{
	return i > 0 && i < p->ntokens &&
		p->tokens[i].kind == TOK_WORD && strcmp(p->tokens[i].value, "tql") == 0 &&
		p->tokens[i - 1].kind == TOK_WORD && strcmp(p->tokens[i - 1].value, "as") == 0;
}

static void
tokenize(Parser *p)
{
	core_yy_extra_type extra;
	core_yyscan_t scanner;
	core_YYSTYPE lval;
	int			loc;
	int			tok;
	int			allocated = 64;

	while (fix_backquotes(p->text))
		;
	scanner = scanner_init(p->text, &extra, &no_keywords, no_keyword_tokens);
	p->tokens = palloc(sizeof(Token) * allocated);
	p->ntokens = 0;
	do
	{
		Token	   *t;

		tok = core_yylex(&lval, &loc, scanner);
		if (p->ntokens == allocated)
		{
			allocated *= 2;
			p->tokens = repalloc(p->tokens, sizeof(Token) * allocated);
		}
		t = &p->tokens[p->ntokens++];
		t->start = tok == 0 ? strlen(p->text) : loc;
		t->value = NULL;
		t->ch = 0;
		switch (tok)
		{
			case 0:
				t->kind = TOK_END;
				break;
			case IDENT:
				t->kind = p->text[loc] == '"' ? TOK_QUOTED : TOK_WORD;
				t->value = lval.str;
				if (t->kind == TOK_WORD && p->ntokens >= 3 &&
					t[-1].kind == TOK_WORD && t[-2].kind == TOK_WORD &&
					starts_tql_text(t[-2].value, t[-1].value, t->value))
				{
					/* TQL's text is not scanned: the statement ends for the parser */
					t->kind = TOK_END;
					t->value = NULL;
					tok = 0;
				}
				break;
			case SCONST:
				t->kind = TOK_STRING;
				t->value = lval.str;
				break;
			case ICONST:
				t->kind = TOK_NUMBER;
				t->value = psprintf("%d", lval.ival);
				break;
			case FCONST:
				t->kind = TOK_NUMBER;
				t->value = lval.str;
				break;
			case TYPECAST:
				t->kind = TOK_TYPECAST;
				break;
			default:
				if (tok > 0 && tok < 256)
				{
					t->kind = TOK_CHAR;
					t->ch = (char) tok;
				}
				else
					t->kind = TOK_OTHER;
				break;
		}
	} while (tok != 0);
	scanner_finish(scanner);
}

static Token *
current(Parser *p)
{
	return &p->tokens[p->pos];
}

/* A token as written: up to the next token, less blanks and comments after it. */
static const char *
token_text(Parser *p, Token *t)
{
	int			end;

	if (t->kind == TOK_END)
		return NULL;
	end = (t + 1)->start;
	if (t->kind != TOK_STRING && t->kind != TOK_QUOTED)
	{
		/* nothing else holds a blank or the start of a comment */
		for (int i = t->start + 1; i < end; i++)
			if (isspace((unsigned char) p->statement[i]) ||
				strncmp(p->statement + i, "--", 2) == 0 ||
				strncmp(p->statement + i, "/*", 2) == 0)
			{
				end = i;
				break;
			}
	}
	while (end > t->start && isspace((unsigned char) p->statement[end - 1]))
		end--;
	return pnstrdup(p->statement + t->start, Max(end - t->start, 1));
}

/* The end of a statement's or query's text before "end", less trailing blanks. */
static int
trimmed_end(Parser *p, int end, int start)
{
	while (end > start && isspace((unsigned char) p->statement[end - 1]))
		end--;
	return end;
}

static void
syntax_error(Parser *p, const char *expected)
{
	Token	   *t = current(p);
	const char *found = token_text(p, t);

	p->error_at = t->start;
	ereport(ERROR,
			(errcode(ERRCODE_SYNTAX_ERROR),
			 found ? errmsg("syntax error at or near \"%s\"", found) :
			 errmsg("syntax error at end of input"),
			 errdetail("Expected %s.", expected),
			 /* "SELECT ...", "CREATE TABLE ...": not a flow statement at all */
			 p->pos - p->statement_first <= 1 ?
			 errhint("flowpg.execute runs GreptimeDB's flow statements; run other statements as PostgreSQL SQL.") : 0));
}

static bool
is_word(Token *t, const char *word)
{
	return t->kind == TOK_WORD && strcmp(t->value, word) == 0;
}

static bool
accept_word(Parser *p, const char *word)
{
	if (!is_word(current(p), word))
		return false;
	p->pos++;
	return true;
}

static void
expect_word(Parser *p, const char *word, const char *expected)
{
	if (!accept_word(p, word))
		syntax_error(p, expected);
}

static bool
accept_char(Parser *p, char c)
{
	if (current(p)->kind != TOK_CHAR || current(p)->ch != c)
		return false;
	p->pos++;
	return true;
}

static void
expect_char(Parser *p, char c)
{
	if (!accept_char(p, c))
		syntax_error(p, psprintf("\"%c\"", c));
}

static char *
parse_identifier(Parser *p, const char *expected)
{
	Token	   *t = current(p);

	if (t->kind != TOK_WORD && t->kind != TOK_QUOTED)
		syntax_error(p, expected);
	p->pos++;
	return t->value;
}

/* name [. name ...]: up to max parts */
static List *
parse_qualified(Parser *p, const char *expected, int max)
{
	List	   *parts = list_make1(makeString(parse_identifier(p, expected)));

	while (accept_char(p, '.'))
	{
		if (list_length(parts) == max)
		{
			p->pos--;
			syntax_error(p, "a name with fewer parts");
		}
		parts = lappend(parts, makeString(parse_identifier(p, "a name after \".\"")));
	}
	return parts;
}

/* GreptimeDB's catalog is flowpg's database: a leading part must name it. */
static List *
strip_catalog(Parser *p, List *parts, int max_without, int first_token)
{
	if (list_length(parts) > max_without)
	{
		const char *catalog = strVal(linitial(parts));

		if (strcmp(catalog, get_database_name(MyDatabaseId)) != 0)
		{
			p->error_at = p->tokens[first_token].start;
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a name in another database cannot be used here: %s",
							NameListToString(parts)),
					 errdetail("GreptimeDB's catalog is the database here: flows of database \"%s\" only.",
							   get_database_name(MyDatabaseId))));
		}
		parts = list_delete_first(parts);
	}
	return parts;
}

static char *
parse_flow_name(Parser *p)
{
	int			first = p->pos;
	List	   *parts = parse_qualified(p, "a flow name", 2);

	return strVal(linitial(strip_catalog(p, parts, 1, first)));
}

static char *
parse_string(Parser *p, const char *expected)
{
	Token	   *t = current(p);

	if (t->kind != TOK_STRING)
		syntax_error(p, expected);
	p->pos++;
	return t->value;
}

/*
 * LIKE 'pattern', or LIKE "pattern" as GreptimeDB's documentation writes
 * it (MySQL's double-quoted string): the text between the quotes, as
 * written (the scanner would fold nothing but truncate a long name).
 */
static char *
parse_pattern(Parser *p)
{
	Token	   *t = current(p);
	StringInfoData buf;

	if (t->kind != TOK_QUOTED || p->statement[t->start] != '"')
		return parse_string(p, "a pattern string after LIKE");
	p->pos++;
	initStringInfo(&buf);
	/* up to the closing quote; "a""b" is a"b (the scanner found it closed) */
	for (const char *c = p->statement + t->start + 1; *c; c++)
	{
		if (*c == '"' && c[1] != '"')
			break;
		appendStringInfoChar(&buf, *c);
		if (*c == '"')
			c++;
	}
	return buf.data;
}

/*
 * '1M' is a month to GreptimeDB (humantime) and a minute to PostgreSQL,
 * which folds case: refused rather than read one way or the other.
 */
static void
check_month_abbreviation(const char *text, const char *clause)
{
	for (int i = 0; text[i]; i++)
	{
		int			before = i - 1;

		if (text[i] != 'M' || isalpha((unsigned char) text[i + 1]))
			continue;
		while (before >= 0 && text[before] == ' ')
			before--;
		if (before >= 0 && isdigit((unsigned char) text[before]))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("interval with months is not allowed in %s", clause),
					 errdetail("GreptimeDB reads \"M\" as months, PostgreSQL as minutes."),
					 errhint("Write minutes as \"m\" or \"min\".")));
	}
}

/*
 * An interval as GreptimeDB writes them: 'text', 'text'::INTERVAL,
 * INTERVAL 'text' [unit], and the text in PostgreSQL's interval syntax,
 * which reads its abbreviations too ('1h', '30m', '7days', '300 s').
 */
static Interval *
parse_interval(Parser *p, const char *clause)
{
	Token	   *start = current(p);
	char	   *text;
	Interval   *result;

	check_stack_depth();		/* ((((...)))) */
	if (accept_char(p, '('))
	{
		result = parse_interval(p, clause);
		expect_char(p, ')');
		return result;
	}
	if (accept_word(p, "interval"))
	{
		text = parse_string(p, "an interval string after INTERVAL");
		/* INTERVAL '1' HOUR */
		if (current(p)->kind == TOK_WORD &&
			(is_word(current(p), "second") || is_word(current(p), "minute") ||
			 is_word(current(p), "hour") || is_word(current(p), "day") ||
			 is_word(current(p), "week")))
		{
			text = psprintf("%s %s", text, current(p)->value);
			p->pos++;
		}
	}
	else
		text = parse_string(p, psprintf("an interval after %s, such as '1 hour'", clause));
	if (current(p)->kind == TOK_TYPECAST)
	{
		p->pos++;
		expect_word(p, "interval", "INTERVAL after \"::\"");
	}

	p->error_at = start->start;
	check_month_abbreviation(text, clause);
	result = DatumGetIntervalP(DirectFunctionCall3(interval_in, CStringGetDatum(text),
												   ObjectIdGetDatum(InvalidOid),
												   Int32GetDatum(-1)));
	if (result->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("interval with months is not allowed in %s", clause),
				 errdetail("Months and years have no fixed length."),
				 errhint("Give it in days, hours, minutes or seconds.")));
	if (result->day < 0 || result->time < 0 || (result->day == 0 && result->time == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be positive, got %s", clause,
						DatumGetCString(DirectFunctionCall1(interval_out,
															IntervalPGetDatum(result))))));
	p->error_at = -1;
	return result;
}

static bool
option_bool(Parser *p, const char *key, const char *value, Token *at)
{
	if (pg_strcasecmp(value, "true") == 0)
		return true;
	if (pg_strcasecmp(value, "false") == 0)
		return false;
	p->error_at = at->start;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid flow option '%s': '%s'", key, value),
			 errdetail("The option is true or false.")));
	return false;				/* keep the compiler quiet */
}

/* WITH (key = value, ...): GreptimeDB's options and flowpg's own. */
static void
parse_with(Parser *p, FlowStatement *s)
{
	StringInfoData json;
	List	   *seen = NIL;

	initStringInfo(&json);
	appendStringInfoChar(&json, '{');
	expect_char(p, '(');
	do
	{
		Token	   *key_token = current(p);
		Token	   *value_token;
		char	   *key;
		char	   *value;

		if (key_token->kind == TOK_STRING)
			key = parse_string(p, "an option name");
		else
			key = parse_identifier(p, "an option name");
		expect_char(p, '=');
		/* an unknown option is that, whatever its value (GreptimeDB checks the name first) */
		if (strcmp(key, "defer_on_missing_source") != 0 &&
			strcmp(key, "experimental_enable_incremental_read") != 0 &&
			strcmp(key, "backfill") != 0 && strcmp(key, "mode") != 0 &&
			strcmp(key, "flow_type") != 0)
		{
			p->error_at = key_token->start;
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown flow option '%s'", key),
					 errdetail("Supported options: defer_on_missing_source, experimental_enable_incremental_read, mode, backfill.")));
		}
		value_token = current(p);
		if (value_token->kind != TOK_STRING && value_token->kind != TOK_WORD &&
			value_token->kind != TOK_NUMBER)
			syntax_error(p, "an option value");
		value = value_token->value;
		p->pos++;

		p->error_at = key_token->start;
		if (list_member(seen, makeString(key)))
			ereport(ERROR,
					(errcode(ERRCODE_SYNTAX_ERROR),
					 errmsg("flow option '%s' is given more than once", key)));
		seen = lappend(seen, makeString(key));
		if (strcmp(key, "defer_on_missing_source") == 0)
			s->defer_on_missing_source = option_bool(p, key, value, value_token);
		else if (strcmp(key, "experimental_enable_incremental_read") == 0)
			(void) option_bool(p, key, value, value_token); /* recorded, no effect */
		else if (strcmp(key, "backfill") == 0)
			s->backfill = option_bool(p, key, value, value_token);
		else if (strcmp(key, "mode") == 0)
		{
			if (strcmp(value, "auto") != 0 && strcmp(value, "streaming") != 0 &&
				strcmp(value, "batching") != 0)
			{
				p->error_at = value_token->start;
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid flow option 'mode': '%s'", value),
						 errdetail("The mode is 'auto', 'streaming' or 'batching'.")));
			}
			s->mode = value;
		}
		else if (strcmp(key, "flow_type") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("flow option 'flow_type' is reserved for internal use"),
					 errhint("flowpg's option mode = 'streaming' or 'batching' asks for an engine.")));
		p->error_at = -1;

		/* as GreptimeDB shows them: booleans as 'true' / 'false' */
		if (json.len > 1)
			appendStringInfoString(&json, ", ");
		escape_json(&json, key);
		appendStringInfoString(&json, ": ");
		if (strcmp(key, "mode") == 0)
			escape_json(&json, value);
		else
			escape_json(&json, option_bool(p, key, value, value_token) ? "true" : "false");
	} while (accept_char(p, ','));
	expect_char(p, ')');
	appendStringInfoChar(&json, '}');
	s->with_json = json.data;
}

/* The sink: [catalog.][schema.]table, quoted for the native API. */
static char *
parse_sink(Parser *p)
{
	int			first = p->pos;
	List	   *parts;
	StringInfoData buf;
	ListCell   *lc;

	/*
	 * SINK TO 'name': GreptimeDB's parser takes a single-quoted string for
	 * an identifier, one name whatever it holds (as "name" here).
	 */
	if (current(p)->kind == TOK_STRING)
		parts = list_make1(makeString(parse_string(p, "a sink table name")));
	else
		parts = strip_catalog(p, parse_qualified(p, "a sink table name", 3), 2, first);

	initStringInfo(&buf);
	foreach(lc, parts)
		appendStringInfo(&buf, "%s%s", foreach_current_index(lc) ? "." : "",
						 quote_identifier(strVal(lfirst(lc))));
	return buf.data;
}

/*
 * GreptimeDB spellings PostgreSQL's grammar rejects, fixed on the tokens of
 * the query in place (same length, so positions hold): a comma right
 * before FROM, AS 'alias', current_timestamp() and its kin.
 */
static void
fix_query_tokens(Parser *p, int from, int to)
{
	for (int i = from; i < to; i++)
	{
		Token	   *t = &p->tokens[i];
		Token	   *next = &p->tokens[i + 1];

		if (t->kind == TOK_CHAR && t->ch == ',' && is_word(next, "from"))
			p->text[t->start] = ' ';
		else if (is_word(t, "as") && next->kind == TOK_STRING)
		{
			const char *raw = token_text(p, next);
			int			len = strlen(next->value);

			/* only a plain 'alias' written in one piece: its quotes become double quotes */
			if (strlen(raw) == len + 2 && raw[0] == '\'' &&
				strchr(next->value, '"') == NULL && strchr(next->value, '\'') == NULL)
			{
				p->text[next->start] = '"';
				p->text[next->start + len + 1] = '"';
			}
		}
		else if ((is_word(t, "current_timestamp") || is_word(t, "current_date") ||
				  is_word(t, "current_time") || is_word(t, "localtimestamp") ||
				  is_word(t, "localtime")) &&
				 next->kind == TOK_CHAR && next->ch == '(' && i + 2 < to &&
				 p->tokens[i + 2].kind == TOK_CHAR && p->tokens[i + 2].ch == ')')
		{
			p->text[next->start] = ' ';
			p->text[p->tokens[i + 2].start] = ' ';
		}
	}
}

static void
parse_create(Parser *p, FlowStatement *s)
{
	int			or_token = -1;
	int			first;

	if (accept_word(p, "or"))
	{
		or_token = p->pos - 1;
		expect_word(p, "replace", "REPLACE after OR");
		s->or_replace = true;
	}
	expect_word(p, "flow", "FLOW");
	if (accept_word(p, "if"))
	{
		expect_word(p, "not", "NOT after IF");
		expect_word(p, "exists", "EXISTS after IF NOT");
		s->if_not_exists = true;
	}
	if (s->or_replace && s->if_not_exists)
	{
		p->error_at = p->tokens[or_token].start;
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("CREATE FLOW cannot have both IF NOT EXISTS and OR REPLACE"),
				 errhint("OR REPLACE replaces an existing flow; IF NOT EXISTS keeps it.")));
	}
	s->flow_name = parse_flow_name(p);
	expect_word(p, "sink", "SINK TO");
	expect_word(p, "to", "TO after SINK");
	s->sink_name = parse_sink(p);
	if (accept_word(p, "expire"))
	{
		expect_word(p, "after", "AFTER after EXPIRE");
		s->expire_after = parse_interval(p, "EXPIRE AFTER");
	}
	if (accept_word(p, "eval"))
	{
		expect_word(p, "interval", "INTERVAL after EVAL");
		s->eval_interval = parse_interval(p, "EVAL INTERVAL");
	}
	if (accept_word(p, "comment"))
		s->comment = parse_string(p, "a string after COMMENT");
	if (accept_word(p, "with"))
		parse_with(p, s);
	if (!accept_word(p, "as"))
		syntax_error(p, s->with_json ? "AS" :
					 s->comment ? "WITH or AS" :
					 s->eval_interval ? "COMMENT, WITH or AS" :
					 s->expire_after ? "EVAL INTERVAL, COMMENT, WITH or AS" :
					 "EXPIRE AFTER, EVAL INTERVAL, COMMENT, WITH or AS");
	if (current(p)->kind == TOK_END || (current(p)->kind == TOK_CHAR && current(p)->ch == ';'))
		syntax_error(p, "the flow's query after AS");
	if (is_tql_start(p, p->pos))
		refuse_tql(p, current(p));
	/* the query runs to the next ";" (the scanner keeps those in strings apart) */
	first = p->pos;
	while (current(p)->kind != TOK_END && !(current(p)->kind == TOK_CHAR && current(p)->ch == ';'))
		p->pos++;
	s->query_start = p->tokens[first].start;
	s->query_end = trimmed_end(p, current(p)->start, s->query_start);
	fix_query_tokens(p, first, p->pos);
}

static void
parse_statement(Parser *p, FlowStatement *s)
{
	if (accept_word(p, "create"))
	{
		s->kind = STMT_CREATE;
		parse_create(p, s);
		return;
	}
	if (accept_word(p, "drop"))
	{
		s->kind = STMT_DROP;
		expect_word(p, "flow", "FLOW after DROP");
		if (accept_word(p, "if"))
		{
			expect_word(p, "exists", "EXISTS after IF");
			s->if_exists = true;
		}
		s->flow_name = parse_flow_name(p);
	}
	else if (accept_word(p, "show"))
	{
		if (accept_word(p, "flows"))
			s->kind = STMT_SHOW_FLOWS;
		else if (accept_word(p, "create"))
		{
			s->kind = STMT_SHOW_CREATE;
			expect_word(p, "flow", "FLOW after SHOW CREATE");
			s->flow_name = parse_flow_name(p);
		}
		else if (accept_word(p, "flow"))
		{
			s->kind = STMT_SHOW_STATUS;
			expect_word(p, "status", "STATUS after SHOW FLOW");
		}
		else
			syntax_error(p, "FLOWS, CREATE FLOW or FLOW STATUS after SHOW");
		if (s->kind != STMT_SHOW_CREATE)
		{
			int			first = p->pos;

			if (accept_word(p, "in") || accept_word(p, "from"))
				(void) strip_catalog(p, list_make2(makeString(parse_identifier(p, "a database name")),
												   makeString("")), 1, first);
			if (accept_word(p, "like"))
				s->pattern = parse_pattern(p);
		}
	}
	else if (accept_word(p, "admin"))
	{
		int			first;

		s->kind = STMT_FLUSH;
		expect_word(p, "flush_flow", "FLUSH_FLOW after ADMIN");
		expect_char(p, '(');
		first = p->pos;
		if (current(p)->kind == TOK_STRING)
		{
			/*
			 * 'flow' or 'catalog.flow': a name in text, read as flush_flow
			 * reads its argument (and as GreptimeDB reads it)
			 */
			List	   *parts = flow_written_name_parts(parse_string(p, "the flow's name"));

			if (parts == NIL || list_length(parts) > 2)
			{
				p->pos--;
				syntax_error(p, "a flow name, or a database and a flow name separated by \".\", in the string");
			}
			s->flow_name = strVal(linitial(strip_catalog(p, parts, 1, first)));
		}
		else
			s->flow_name = parse_flow_name(p);
		expect_char(p, ')');
	}
	else if (accept_word(p, "comment"))
	{
		s->kind = STMT_COMMENT;
		expect_word(p, "on", "ON after COMMENT");
		expect_word(p, "flow", "FLOW after COMMENT ON");
		s->flow_name = parse_flow_name(p);
		expect_word(p, "is", "IS");
		if (!accept_word(p, "null"))
			s->comment = parse_string(p, "a string or NULL after IS");
	}
	else
		syntax_error(p, STATEMENT_KINDS);
}

/* The statements of the text, separated by ";". */
static List *
parse(Parser *p, const char *statement)
{
	List	   *statements = NIL;

	p->statement = statement;
	p->text = pstrdup(statement);
	p->pos = 0;
	p->error_at = -1;
	tokenize(p);
	while (current(p)->kind != TOK_END)
	{
		FlowStatement *s;

		if (accept_char(p, ';'))
			continue;			/* an empty statement */
		s = palloc0(sizeof(FlowStatement));
		s->backfill = true;
		s->mode = "auto";
		s->stmt_start = current(p)->start;
		p->statement_first = p->pos;
		parse_statement(p, s);
		s->stmt_end = trimmed_end(p, current(p)->start, s->stmt_start);
		statements = lappend(statements, s);
		if (!accept_char(p, ';') && current(p)->kind != TOK_END)
			syntax_error(p, "\";\" or the end of the statement");
	}
	if (statements == NIL)
		syntax_error(p, STATEMENT_KINDS);
	return statements;
}

/* The result rows: (flow_name, result, affected_rows). */
static void
put_row(ReturnSetInfo *rsinfo, const char *flow_name, const char *result,
		bool has_rows, int64 rows)
{
	Datum		values[3];
	bool		nulls[3] = {flow_name == NULL, result == NULL, !has_rows};

	values[0] = flow_name ? CStringGetTextDatum(flow_name) : (Datum) 0;
	values[1] = result ? CStringGetTextDatum(result) : (Datum) 0;
	values[2] = Int64GetDatum(rows);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* The tables the query names that do not exist (search_path as now). */
typedef struct SourcesContext
{
	List	   *ctes;			/* WITH names in scope */
	List	   *missing;		/* names */
} SourcesContext;

static bool
sources_walker(Node *node, SourcesContext *cxt)
{
	if (node == NULL)
		return false;
	if (IsA(node, SelectStmt) && ((SelectStmt *) node)->withClause)
	{
		SelectStmt *sel = (SelectStmt *) node;
		WithClause *with = sel->withClause;
		List	   *outer = cxt->ctes;
		ListCell   *lc;
		bool		result;

		/* its names are in scope in its own queries and the rest of the SELECT */
		cxt->ctes = list_copy(outer);
		foreach(lc, with->ctes)
			cxt->ctes = lappend(cxt->ctes, ((CommonTableExpr *) lfirst(lc))->ctename);
		sel->withClause = NULL;
		result = sources_walker((Node *) with->ctes, cxt) || sources_walker(node, cxt);
		sel->withClause = with;
		cxt->ctes = outer;
		return result;
	}
	if (IsA(node, CommonTableExpr))
		return sources_walker(((CommonTableExpr *) node)->ctequery, cxt);
	if (IsA(node, RangeVar))
	{
		RangeVar   *rv = (RangeVar *) node;
		ListCell   *lc;
		Oid			relid;

		if (rv->schemaname == NULL)
			foreach(lc, cxt->ctes)
				if (strcmp(lfirst(lc), rv->relname) == 0)
					return false;
		relid = RangeVarGetRelid(rv, NoLock, true);
		if (!OidIsValid(relid))
			cxt->missing = lappend(cxt->missing,
								   rv->schemaname ? psprintf("%s.%s", rv->schemaname, rv->relname) :
								   rv->relname);
		return false;
	}
	return raw_expression_tree_walker(node, sources_walker, (void *) cxt);
}

/* The missing tables as a list for messages, NULL when none. */
static char *
find_missing_sources(Parser *p, const char *query, int query_start)
{
	SourcesContext cxt = {NIL, NIL};
	List	   *raw;
	StringInfoData buf;
	ListCell   *lc;

	/* raw_parser's positions are the query's */
	p->query_offset = pg_mbstrlen_with_len(p->statement, query_start);
	positions_push(p);
	raw = raw_parser(query, RAW_PARSE_DEFAULT);
	positions_pop(p);
	p->query_offset = 0;
	/* anything but one SELECT: the planner says what is wrong */
	if (list_length(raw) == 1 && IsA(linitial_node(RawStmt, raw)->stmt, SelectStmt))
		(void) sources_walker(linitial_node(RawStmt, raw)->stmt, &cxt);
	if (cxt.missing == NIL)
		return NULL;
	initStringInfo(&buf);
	foreach(lc, cxt.missing)
		appendStringInfo(&buf, "%s%s", foreach_current_index(lc) ? ", " : "",
						 (char *) lfirst(lc));
	return buf.data;
}

static void
check_pending_owner(PendingFlow *pending)
{
	if (!has_privs_of_role(GetUserId(), pending->owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of flow \"%s\"", pending->flow_name)));
}

static bool
execute_create(Parser *p, FlowStatement *s, ReturnSetInfo *rsinfo, bool starting_pending)
{
	const char *query = pnstrdup(p->text + s->query_start, s->query_end - s->query_start);
	int			offset = pg_mbstrlen_with_len(p->statement, s->query_start);
	FlowQuerySource source = {p->statement, offset, true};
	FlowDefinition def = {0};
	PendingFlow *pending;
	FlowEntry  *existing;
	FlowCreated outcome;
	char	   *missing;

	flow_lock_name(s->flow_name);
	/* another session may have started it while we waited for the lock */
	if (starting_pending && !pending_flow_exists(s->flow_name))
		return false;
	existing = catalog_get_by_name(s->flow_name);
	pending = starting_pending ? NULL : pending_flow_get(s->flow_name);
	missing = find_missing_sources(p, query, s->query_start);

	if (missing)
	{
		PendingFlow flow;

		if (!s->defer_on_missing_source)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("missing source tables for flow \"%s\": %s", s->flow_name, missing),
					 errhint("Create the tables first, or use WITH (defer_on_missing_source = true) to create a pending flow that starts when they appear.")));
		if (starting_pending)
			return false;		/* still waiting */
		if (existing || (pending && !s->or_replace))
		{
			if (s->if_not_exists)
			{
				ereport(NOTICE,
						(errcode(ERRCODE_DUPLICATE_OBJECT),
						 errmsg("flow \"%s\" already exists, skipping", s->flow_name)));
				put_row(rsinfo, s->flow_name, "exists", true, 0);
				return false;
			}
			if (existing && s->or_replace)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot replace flow \"%s\" by a pending flow", s->flow_name),
						 errdetail("Its new source tables do not exist: %s.", missing),
						 errhint("Drop the flow first, or create the tables.")));
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("flow \"%s\" already exists", s->flow_name),
					 errhint("Use CREATE OR REPLACE FLOW to replace it, or IF NOT EXISTS to keep it.")));
		}
		if (pending)
			check_pending_owner(pending);
		else
			flow_check_limits();
		flow.flow_name = s->flow_name;
		flow.owner = GetUserId();
		flow.statement = pnstrdup(p->statement + s->stmt_start, s->stmt_end - s->stmt_start);
		/* it is kept, listed and parsed again at every start attempt */
		if (strlen(flow.statement) > PENDING_STATEMENT_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("the statement of pending flow \"%s\" is too long", s->flow_name),
					 errdetail("A pending flow's statement may have at most %d bytes; this one has %zu.",
							   PENDING_STATEMENT_MAX, strlen(flow.statement)),
					 errhint("Create the tables first, then the flow.")));
		flow.settings = flow_settings_capture();
		settings_warn_unsafe_search_path(GetUserId());
		flow.sink_name = s->sink_name;
		flow.comment = s->comment;
		flow.options = s->with_json;
		flow.expire_after = s->expire_after;
		pending_flow_add(&flow, missing);
		ereport(NOTICE,
				(errmsg("flow \"%s\" is pending: it starts when %s exists", s->flow_name, missing)));
		put_row(rsinfo, s->flow_name, "pending", true, 0);
		return false;
	}

	if (pending)
	{
		if (s->if_not_exists)
		{
			ereport(NOTICE,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("flow \"%s\" already exists, skipping", s->flow_name)));
			put_row(rsinfo, s->flow_name, "exists", true, 0);
			return false;
		}
		if (!s->or_replace)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("flow \"%s\" already exists", s->flow_name),
					 errdetail("It is pending: it waits for its source tables."),
					 errhint("Use CREATE OR REPLACE FLOW to replace it.")));
		check_pending_owner(pending);
		pending_flow_remove(s->flow_name);
	}

	if (starting_pending)
		pending_flow_remove(s->flow_name);	/* it is no longer pending */

	def.flow_name = s->flow_name;
	def.sink_name = s->sink_name;
	def.query_text = query;
	def.mode_name = s->mode;
	def.expire_after = s->expire_after;
	def.eval_interval = s->eval_interval;
	def.comment = s->comment;
	def.or_replace = s->or_replace;
	def.if_not_exists = s->if_not_exists;
	def.backfill = s->backfill;
	def.source = &source;
	def.written_query = pnstrdup(p->statement + s->query_start, s->query_end - s->query_start);
	def.greptime_options = s->with_json;
	def.settings = s->pinned_settings;
	def.vet_objects = starting_pending;
	/* GreptimeDB matches an existing sink's columns by position where names differ */
	def.match_by_position = true;
	(void) flow_create(&def, &outcome);
	if (rsinfo)
		put_row(rsinfo, s->flow_name,
				outcome == FLOW_CREATED ? "created" :
				outcome == FLOW_REPLACED ? "replaced" : "exists", true, 0);
	return outcome != FLOW_KEPT;
}

/* Runs a query on flowpg's views as the caller, one result row per row. */
static void
show_rows(ReturnSetInfo *rsinfo, const char *sql, const char *pattern)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {pattern ? CStringGetTextDatum(pattern) : (Datum) 0};
	char		nulls[1] = {pattern ? ' ' : 'n'};

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* not read-only: a fresh snapshot sees what earlier statements of the call did */
	if (SPI_execute_with_args(sql, 1, types, values, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "flowpg could not run \"%s\"", sql);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		put_row(rsinfo, SPI_getvalue(tuple, desc, 1), SPI_getvalue(tuple, desc, 2), false, 0);
	}
	SPI_finish();
}

static void
execute_statement(Parser *p, FlowStatement *s, ReturnSetInfo *rsinfo)
{
	PendingFlow *pending;
	int64		rows_before;

	switch (s->kind)
	{
		case STMT_CREATE:
			execute_create(p, s, rsinfo, false);
			break;
		case STMT_DROP:
			flow_lock_name(s->flow_name);
			pending = pending_flow_get(s->flow_name);
			if (pending)
			{
				catalog_check_may_drop(pending->owner, s->flow_name);
				pending_flow_remove(s->flow_name);
				put_row(rsinfo, s->flow_name, "dropped", true, 0);
			}
			else if (flow_drop(s->flow_name, s->if_exists))
				put_row(rsinfo, s->flow_name, "dropped", true, 0);
			else
				put_row(rsinfo, s->flow_name, "does not exist", true, 0);
			break;
		case STMT_SHOW_FLOWS:
			show_rows(rsinfo,
					  "SELECT flow_name, state FROM flowpg.information_schema_flows "
					  "WHERE $1 IS NULL OR flow_name LIKE $1 ORDER BY flow_name", s->pattern);
			break;
		case STMT_SHOW_CREATE:
			rows_before = tuplestore_tuple_count(rsinfo->setResult);
			show_rows(rsinfo,
					  "SELECT flow_name, flow_definition FROM flowpg.information_schema_flows "
					  "WHERE flow_name = $1", s->flow_name);
			if (tuplestore_tuple_count(rsinfo->setResult) == rows_before)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_OBJECT),
						 errmsg("flow \"%s\" does not exist", s->flow_name)));
			break;
		case STMT_SHOW_STATUS:
			show_rows(rsinfo,
					  "SELECT flow_name, pg_catalog.row_to_json(s)::text "
					  "FROM flowpg.information_schema_flow_statistics s "
					  "WHERE $1 IS NULL OR flow_name LIKE $1 ORDER BY flow_name", s->pattern);
			break;
		case STMT_FLUSH:
			/* a pending flow: flow_flush waits for a worker's attempt to start it */
			put_row(rsinfo, s->flow_name, "flushed", true, flow_flush(s->flow_name));
			break;
		case STMT_COMMENT:
			if (pending_flow_exists(s->flow_name))
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("flow \"%s\" is pending: comment it once it exists, or give COMMENT in CREATE FLOW",
								s->flow_name)));
			flow_set_comment(s->flow_name, s->comment);
			put_row(rsinfo, s->flow_name, "commented", true, 0);
			break;
	}
}

/*
 * Parses and runs the statements of the text, in order; with
 * pending_settings, the one CREATE FLOW of a pending flow starting (its
 * result rows go nowhere): true when it was created.
 */
static bool
run_statement(const char *statement, ReturnSetInfo *rsinfo, ArrayType *pending_settings)
{
	Parser		p;
	List	   *statements;
	FlowStatement *s;
	ListCell   *lc;

	memset(&p, 0, sizeof(p));
	p.error_at = -1;
	p.statement = statement;
	positions_push(&p);
	statements = parse(&p, statement);
	positions_pop(&p);
	if (pending_settings == NULL)
	{
		foreach(lc, statements)
			execute_statement(&p, lfirst(lc), rsinfo);
		return false;
	}
	/* a pending flow's statement: its CREATE FLOW alone */
	s = linitial(statements);
	if (list_length(statements) != 1 || s->kind != STMT_CREATE)
		return false;
	/* it is created once: no OR REPLACE, no IF NOT EXISTS */
	s->if_not_exists = false;
	s->or_replace = false;
	s->pinned_settings = pending_settings;
	return execute_create(&p, s, NULL, true);
}

Datum
flowpg_execute(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("statement must not be NULL")));
	InitMaterializedSRF(fcinfo, 0);
	(void) run_statement(text_to_cstring(PG_GETARG_TEXT_PP(0)),
						 (ReturnSetInfo *) fcinfo->resultinfo, NULL);
	return (Datum) 0;
}

typedef struct StartAttempt
{
	PendingFlow *pending;
	bool		started;
} StartAttempt;

/* One pending flow's attempt to start, in a subtransaction. */
static void
start_pending(void *arg)
{
	StartAttempt *attempt = (StartAttempt *) arg;
	FlowIdentity identity;

	flow_limit_lock_waits();	/* until the subtransaction ends */
	flow_enter(&identity, attempt->pending->owner, attempt->pending->settings, false);
	attempt->started = run_statement(attempt->pending->statement, NULL,
									 attempt->pending->settings);
	flow_leave(&identity);
}

/* Remembers why a start failed; says it once per different reason. */
static void
start_failed(PendingFlow *pending, int sqlerrcode, const char *message)
{
	if (pending->last_error && strcmp(pending->last_error, message) == 0)
		return;
	ereport(LOG,
			(errcode(sqlerrcode),
			 errmsg("pending flow \"%s\" could not start: %s", pending->flow_name, message)));
	pending_flow_set_error(pending->flow_name, message);
}

/*
 * In a flowpg worker, in a transaction of the start's own: one pending
 * flow's attempt to start, as its owner under its own settings.  A failure
 * stays in the views.  Returns whether it started; *retry when it could
 * not be tried now (its locks were busy, or a cancel came).
 */
static bool in_pending_start = false;

bool
greptime_start_pending_flow(const char *flow_name, bool *retry)
{
	StartAttempt attempt = {pending_flow_get(flow_name), false};
	ErrorData  *edata;

	*retry = false;
	if (attempt.pending == NULL)
		return false;			/* dropped, or started by another worker */
	if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(attempt.pending->owner)))
	{
		start_failed(attempt.pending, ERRCODE_UNDEFINED_OBJECT,
					 "its owner role no longer exists");
		return false;
	}
	/* (the DDL of the start itself -- its sink -- asks for no other pass: see below) */
	in_pending_start = true;
	PG_TRY();
	{
		edata = subxact_run(start_pending, &attempt);
	}
	PG_FINALLY();
	{
		in_pending_start = false;
	}
	PG_END_TRY();
	if (edata == NULL)
	{
		if (attempt.started)
			ereport(LOG,
					(errmsg("pending flow \"%s\" started", attempt.pending->flow_name)));
		return attempt.started;
	}
	if (edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
		ReThrowError(edata);
	/* a table another transaction holds, or a preempting drop: later, not a failure */
	if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ||
		edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
	{
		QueryCancelPending = false;
		*retry = true;
		FreeErrorData(edata);
		return false;
	}
	start_failed(attempt.pending, edata->sqlerrcode, edata->message);
	return false;
}

/*
 * The event trigger of CREATE TABLE, ALTER TABLE (a rename), GRANT, ...:
 * pending flows may start now.  Only noted: a worker tries once this
 * transaction commits, so that no flow's code runs inside the statement of
 * a role that is not its owner, nor with that session's settings, nor
 * makes it wait.
 */
Datum
flowpg_start_pending_flows(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "flowpg_start_pending_flows must be called as an event trigger");
	/* a start's own sink: the worker's pass goes on while any flow started */
	if (privileged_own_ddl || in_pending_start || !catalog_exists() || !pending_flow_any())
		PG_RETURN_VOID();
	pool_check_pending_at_commit();
	PG_RETURN_VOID();
}

/*
 * flowpg._pending_flow_parts(statement, settings): what a pending flow's
 * flow_definition shows in GreptimeDB's layout, as an active flow's: the
 * sink schema-qualified (the schema it is, or would be created, in under
 * the flow's search_path), EVAL INTERVAL, and the query as written.  NULLs
 * when the statement no longer parses.
 */
PG_FUNCTION_INFO_V1(flowpg_pending_flow_parts);

static char *
qualified_sink(const char *sink_name, ArrayType *settings)
{
	char	   *copy = pstrdup(sink_name);
	List	   *parts;
	RangeVar   *rv;
	Oid			nspid = InvalidOid;
	Oid			relid;
	int			nestlevel;
	Datum	   *elems;
	int			nelems;

	if (!SplitIdentifierString(copy, '.', &parts) || list_length(parts) != 1)
		return pstrdup(sink_name);	/* qualified as written */
	rv = makeRangeVar(NULL, linitial(parts), -1);

	/* under the search_path the flow starts with */
	nestlevel = NewGUCNestLevel();
	deconstruct_array(settings, TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &nelems);
	for (int i = 0; i < nelems; i++)
	{
		char	   *setting = TextDatumGetCString(elems[i]);

		if (strncmp(setting, "search_path=", 12) == 0)
			(void) set_config_option("search_path", setting + 12, PGC_USERSET, PGC_S_SESSION,
									 GUC_ACTION_SAVE, true, 0, false);
	}
	relid = RangeVarGetRelid(rv, NoLock, true);
	if (OidIsValid(relid))
		nspid = get_rel_namespace(relid);
	else
	{
		List	   *path = fetch_search_path(false);

		if (path != NIL && !isAnyTempNamespace(linitial_oid(path)))
			nspid = linitial_oid(path);
	}
	AtEOXact_GUC(true, nestlevel);
	if (!OidIsValid(nspid) || get_namespace_name(nspid) == NULL)
		return pstrdup(sink_name);
	return psprintf("%s.%s", quote_identifier(get_namespace_name(nspid)),
					quote_identifier(rv->relname));
}

Datum
flowpg_pending_flow_parts(PG_FUNCTION_ARGS)
{
	char	   *statement = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ArrayType  *settings = PG_GETARG_ARRAYTYPE_P(1);
	MemoryContext oldcontext = CurrentMemoryContext;
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {true, true, true};
	Parser		p;
	FlowStatement *s = NULL;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	memset(&p, 0, sizeof(p));
	p.error_at = -1;
	PG_TRY();
	{
		List	   *statements = parse(&p, statement);

		s = linitial(statements);
		if (list_length(statements) != 1 || s->kind != STMT_CREATE)
			s = NULL;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/* a statement this version no longer reads: shown as written */
		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_SYNTAX_ERROR &&
			edata->sqlerrcode != ERRCODE_INVALID_PARAMETER_VALUE &&
			edata->sqlerrcode != ERRCODE_FEATURE_NOT_SUPPORTED)
			PG_RE_THROW();
		FlushErrorState();
		s = NULL;
	}
	PG_END_TRY();
	if (s)
	{
		values[0] = CStringGetTextDatum(qualified_sink(s->sink_name, settings));
		nulls[0] = false;
		if (s->eval_interval)
		{
			values[1] = IntervalPGetDatum(s->eval_interval);
			nulls[1] = false;
		}
		values[2] = CStringGetTextDatum(pnstrdup(p.statement + s->query_start,
												 s->query_end - s->query_start));
		nulls[2] = false;
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
