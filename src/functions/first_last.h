/*-------------------------------------------------------------------------
 *
 * first_last.h
 *	  flowpg.first_value_by / flowpg.last_value_by: ordered first and last
 *	  values as combinable aggregates.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_FIRST_LAST_H
#define FLOWPG_FIRST_LAST_H

#include "nodes/parsenodes.h"

/* Errors unless the type has a default btree operator class. */
extern void first_last_check_key_type(Oid keytype);

/*
 * A flow's calls of first_value_by / last_value_by, in its subqueries too:
 * errors for keys they cannot order, before any row is read.
 */
extern void first_last_check_query(Query *query);

#endif							/* FLOWPG_FIRST_LAST_H */
