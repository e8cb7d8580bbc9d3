/*-------------------------------------------------------------------------
 *
 * dialect.h
 *	  GreptimeDB's SQL dialect in a flow's query, on PostgreSQL's parse trees.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_DIALECT_H
#define FLOWPG_DIALECT_H

#include "nodes/parsenodes.h"

extern List *dialect_rewrite_raw(SelectStmt *stmt, const char *query_text,
								 bool greptime_names, bool cut_long_names);
extern Query *dialect_rewrite_query(Query *query, List *moments, const char *query_text);
extern bool dialect_uses_now(Query *query);
extern bool dialect_expr_uses_now(Node *expr);
extern char *dialect_output_name(Node *expr, List *from, bool cut_long_name);
extern Query *dialect_analyze(RawStmt *stmt, const char *query_text, bool datafusion_types);


#endif							/* FLOWPG_DIALECT_H */
