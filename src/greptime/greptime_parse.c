/*-------------------------------------------------------------------------
 *
 * greptime_parse.c
 *	  The parser of GreptimeDB's flow statements: a text of statements into
 *	  parsed statements (FlowStatement, greptime_parse.h), run by greptime.c.
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
 * A query that is TQL (AS TQL EVAL ...) runs to the end of the text;
 * tql.c translates it into SQL.
 * A text may hold several statements separated by ";" (a CREATE FLOW's
 * query ends at the next one).
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

#include <ctype.h>

#include "catalog/namespace.h"
#include "commands/dbcommands.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "parser/parser.h"
#include "parser/scanner.h"
#include "parser/gram.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/timestamp.h"

#include "flow_names.h"
#include "guc.h"
#include "greptime_parse.h"

/* The scanner is asked to know no keywords: every word is an IDENT. */
static const ScanKeywordList no_keywords = {"", NULL, NULL, 0, 0};
static const uint16 no_keyword_tokens[1] = {0};


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
void
greptime_positions_push(Parser *p)
{
	p->positions.callback = statement_error_callback;
	p->positions.arg = p;
	p->positions.previous = error_context_stack;
	error_context_stack = &p->positions;
}

void
greptime_positions_pop(Parser *p)
{
	error_context_stack = p->positions.previous;
}

/*
 * Is the word after "as", "tql" the start of TQL's text (AS TQL EVAL ...)?
 * What follows is PromQL, which PostgreSQL's scanner cannot read ('5m' is
 * no SQL token): the scans stop there, and tql.c reads the rest.
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
			strcmp(key, "merge_mode") != 0 && strcmp(key, "flow_type") != 0)
		{
			p->error_at = key_token->start;
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown flow option '%s'", key),
					 errdetail("Supported options: defer_on_missing_source, experimental_enable_incremental_read, mode, backfill, merge_mode.")));
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
			s->incremental_read = option_bool(p, key, value, value_token);
		else if (strcmp(key, "backfill") == 0)
			s->backfill = option_bool(p, key, value, value_token);
		else if (strcmp(key, "merge_mode") == 0)
		{
			if (strcmp(value, "last_non_null") != 0 && strcmp(value, "last_row") != 0)
			{
				p->error_at = value_token->start;
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid flow option 'merge_mode': '%s'", value),
						 errdetail("The merge mode is 'last_row' or 'last_non_null', as a GreptimeDB table's.")));
			}
			s->last_non_null = strcmp(value, "last_non_null") == 0;
		}
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
		if (strcmp(key, "mode") == 0 || strcmp(key, "merge_mode") == 0)
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
refuse_tql_cte(Parser *p)
{
	p->error_at = current(p)->start;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid flow query: WITH is only supported for the simplest TQL CTE in CREATE FLOW"),
			 errdetail("The query must be WITH name (columns) AS (TQL EVAL ...) SELECT * FROM name.")));
}

/*
 * GreptimeDB's TQL CTE, WITH name [(columns)] AS (TQL EVAL ...) SELECT *
 * FROM name: the TQL with its outputs renamed (time, value, labels, in that
 * order).  Any other WITH holding TQL is refused, as GreptimeDB refuses it.
 */
static bool
parse_tql_cte(Parser *p, FlowStatement *s)
{
	int			save = p->pos;
	Token	   *name;
	List	   *columns = NIL;
	int			open;
	int			close;
	int			depth = 1;
	char		quote = 0;

	if (!accept_word(p, "with"))
		return false;
	/* a TQL CTE anywhere in the WITH list: only the simplest shape */
	for (int i = p->pos; i + 1 < p->ntokens && p->tokens[i].kind != TOK_END; i++)
		if (p->tokens[i].kind == TOK_CHAR && p->tokens[i].ch == '(' && is_word(&p->tokens[i + 1], "tql"))
			goto found;
	p->pos = save;
	return false;
found:
	name = current(p);
	if (name->kind != TOK_WORD && name->kind != TOK_QUOTED)
		refuse_tql_cte(p);
	p->pos++;
	if (accept_char(p, '('))
	{
		do
			columns = lappend(columns, makeString(parse_identifier(p, "a column name")));
		while (accept_char(p, ','));
		expect_char(p, ')');
	}
	if (!accept_word(p, "as") || !accept_char(p, '(') || !is_word(current(p), "tql"))
		refuse_tql_cte(p);
	/* the TQL text up to the parenthesis that closes the CTE */
	open = current(p)->start;
	for (close = open; p->text[close] && depth > 0; close++)
	{
		char		c = p->text[close];

		if (quote)
			quote = c == quote ? 0 : quote;
		else if (c == '\'' || c == '"')
			quote = c;
		else if (c == '(')
			depth++;
		else if (c == ')')
			depth--;
	}
	if (depth > 0)
		syntax_error(p, "\")\" closing the TQL CTE");
	close--;					/* at the ")" */
	while (p->pos < p->ntokens && current(p)->kind != TOK_END && current(p)->start <= close)
		p->pos++;
	if (!accept_word(p, "select") || !accept_char(p, '*') || !accept_word(p, "from") ||
		current(p)->kind != name->kind || strcmp(current(p)->value, name->value) != 0)
		refuse_tql_cte(p);
	p->pos++;
	if (!(current(p)->kind == TOK_END || (current(p)->kind == TOK_CHAR && current(p)->ch == ';')))
		refuse_tql_cte(p);
	s->tql = true;
	s->tql_columns = columns;
	s->query_start = open;
	s->query_end = close;
	return true;
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
	if (parse_tql_cte(p, s))
		return;
	if (is_tql_start(p, p->pos))
	{
		/* TQL's text runs to the end of the text (tql.c translates it) */
		int			len = strlen(p->text);

		s->tql = true;
		s->query_start = current(p)->start;
		while (len > s->query_start &&
			   (isspace((unsigned char) p->text[len - 1]) || p->text[len - 1] == ';'))
			len--;
		s->query_end = len;
		p->pos++;
		current(p)->start = strlen(p->text);
		return;
	}
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
List *
greptime_parse(Parser *p, const char *statement)
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
		s->backfill = flowpg_execute_backfill;
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
