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

/* dialect_types.c: DataFusion's types, and two raw-tree helpers dialect.c uses */
extern void dialect_timestamp_types(SelectStmt *stmt, const char *query_text);
extern void dialect_datafusion_types(RawStmt *stmt, const char *query_text);
extern bool dialect_is_unqualified_call(FuncCall *call, const char *name);

/* Is there an aggregate of that name and number of arguments on the path? */
extern bool dialect_aggregate_visible(List *funcname, int nargs);
extern bool dialect_type_is_temporary(Oid typid);

#endif							/* FLOWPG_DIALECT_H */
