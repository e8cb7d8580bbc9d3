/*-------------------------------------------------------------------------
 *
 * trust.h
 *	  Whose objects a flow may run as its owner when flowpg, not the
 *	  owner, resolved its query (pending starts, restores).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_TRUST_H
#define FLOWPG_TRUST_H

#include "nodes/bitmapset.h"
#include "nodes/parsenodes.h"

/* Can object_owner's code run as flow_owner?  Only if it can act as flow_owner. */
extern bool trust_role_trusted(Oid object_owner, Oid flow_owner);

/* The current database's owner (what pg_database_owner stands for). */
extern Oid	trust_database_owner(void);

/*
 * The first object of the analysed query (a table, function, cast, type)
 * whose owner is not trusted, described for a message; NULL if none.
 */
extern char *trust_untrusted_in_query(Query *query, Oid flow_owner);
extern char *trust_untrusted_relation(Oid relid, Oid flow_owner, const char *what);

/*
 * The first piece of the table's own code that would run as flow_owner
 * when the flow reads it, or writes it (columns written: the others'
 * defaults run) and that flowpg does not trust; NULL if none.
 */
extern char *trust_untrusted_table_code(Oid relid, Oid flow_owner, bool writes,
										Bitmapset *written);
extern void trust_require_table_code(const char *untrusted, const char *flow_name,
									 Oid flow_owner);

/* ERROR (42501) naming the untrusted object, unless it is NULL. */
extern void trust_require(const char *untrusted, const char *flow_name, Oid flow_owner);

#endif							/* FLOWPG_TRUST_H */
