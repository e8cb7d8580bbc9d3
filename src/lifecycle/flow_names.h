/*-------------------------------------------------------------------------
 *
 * flow_names.h
 *	  The flow a caller names: names, required arguments, the owner's check.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_FLOW_NAMES_H
#define FLOWPG_FLOW_NAMES_H

#include "fmgr.h"

#include "catalog.h"

/* A text argument of a SQL function: NULL and empty are errors naming it. */
extern char *flow_required_text_arg(FunctionCallInfo fcinfo, int argno, const char *argname);

/* A boolean argument of a SQL function: NULL is an error naming it. */
extern bool flow_required_bool_arg(FunctionCallInfo fcinfo, int argno, const char *argname);

/*
 * Flow names follow PostgreSQL's rules for identifiers, as table names
 * given as text do (regclass, sink_table): unquoted, a name is folded to
 * lower case; double-quoted, it keeps its case, spaces and other
 * characters.  Every function taking a flow's name from a user goes
 * through flow_name_parse, which returns the name as flowpg.flow stores it
 * (an error naming flow_name when the text is not one name), mostly by way
 * of flow_name_arg or flow_owned_by_caller.  Functions of other files
 * (flow_drop, flow_flush, ...) and catalog_get_by_name take stored
 * names, which the GreptimeDB front end gets from its own scanner.
 */
extern char *flow_name_parse(const char *written);

/* A flow_name argument of a SQL function: required, then flow_name_parse. */
extern char *flow_name_arg(FunctionCallInfo fcinfo, int argno);

/*
 * A name given as text, by PostgreSQL's rules for names in text (those of
 * regclass): its parts, String nodes, separated by dots; NIL when the text
 * is not such a name.
 */
extern List *flow_written_name_parts(const char *written);

/*
 * The flow of that name as a user wrote it (flow_name_parse), for its
 * owner (or a role that may act for it): waits for a pending flow's start,
 * finishes a restored flow's restore, errors out when there is none or the
 * caller may not act for it.
 */
extern FlowEntry *flow_owned_by_caller(const char *written_name);


/*
 * The flow of that stored name, for its owner (or a role that may act for
 * it): waits for a pending flow's start, finishes a restored flow's
 * restore, errors out when there is none or the caller may not act for it.
 */
extern FlowEntry *flow_owned(const char *flow_name);

/* The error for a flow name that names no flow (saying so for a near one). */
extern void flow_does_not_exist(const char *flow_name) pg_attribute_noreturn();

#endif							/* FLOWPG_FLOW_NAMES_H */
