/*-------------------------------------------------------------------------
 *
 * greptime_parse.h
 *	  The parser of GreptimeDB's flow statements (greptime_parse.c): the
 *	  parsed statements it hands the executor (greptime.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_GREPTIME_PARSE_H
#define FLOWPG_GREPTIME_PARSE_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/array.h"
#include "utils/elog.h"

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
	bool		incremental_read;	/* experimental_enable_incremental_read */
	bool		last_non_null;	/* merge_mode = 'last_non_null' */
	bool		tql;			/* the query is TQL (tql.c) */
	List	   *tql_columns;	/* a TQL CTE's column names (time, value, labels) */
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

/*
 * The statements of the text, separated by ";": a List of FlowStatement.
 * Errors point into the text while the positions are pushed.
 */
extern List *greptime_parse(Parser *p, const char *statement);

/* Errors of the parse, and of the query's raw parse, point into the statement. */
extern void greptime_positions_push(Parser *p);
extern void greptime_positions_pop(Parser *p);

#endif							/* FLOWPG_GREPTIME_PARSE_H */
