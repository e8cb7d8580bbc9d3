/*-------------------------------------------------------------------------
 *
 * dialect_types.h
 *	  DataFusion's types in a flow's outputs and its Timestamp casts, and
 *	  the raw-tree helpers the dialects share (dialect.c, timescale.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_DIALECT_TYPES_H
#define FLOWPG_DIALECT_TYPES_H

#include "nodes/parsenodes.h"

extern void dialect_timestamp_types(SelectStmt *stmt, const char *query_text);
extern void dialect_datafusion_types(RawStmt *stmt, const char *query_text);
extern bool dialect_is_unqualified_call(FuncCall *call, const char *name);

/* Is there an aggregate of that name and number of arguments on the path? */
extern bool dialect_aggregate_visible(List *funcname, int nargs);
extern bool dialect_type_is_temporary(Oid typid);

#endif							/* FLOWPG_DIALECT_TYPES_H */
