/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  Settings pinned per flow, so every process evaluates it identically.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_SETTINGS_H
#define FLOWPG_SETTINGS_H

#include "utils/array.h"

/* The current values of the pinned settings, as a text[] of name=value. */
extern ArrayType *flow_settings_capture(void);

/*
 * Applies pinned settings until flow_settings_pop, which also undoes any SET
 * made meanwhile (by the flow's own functions, say): for evaluating the
 * flow, as its owner would run its query.
 */
extern int	flow_settings_push(ArrayType *settings);

/*
 * The same with search_path = pg_catalog, pg_temp: for producing and
 * parsing the flow's canonical text, in which every name is qualified.
 */
extern int	flow_settings_push_canonical(ArrayType *settings);
extern void flow_settings_pop(int nestlevel);

/*
 * A flow's world: its owner's identity in a restricted security context,
 * and its pinned settings (canonical: for canonical text; NULL settings:
 * the identity alone).  Every expression of a flow is evaluated in it.
 */
typedef struct FlowIdentity
{
	Oid			save_userid;
	int			save_sec_context;
	int			nestlevel;		/* -1: no settings pushed */
} FlowIdentity;

extern void flow_enter(FlowIdentity *id, Oid owner, ArrayType *settings, bool canonical);
extern void flow_leave(FlowIdentity *id);

/* Only search_path = pg_catalog, pg_temp, until flow_settings_pop. */
extern int	settings_push_safe_search_path(void);

/*
 * Warns about schemas of the current search_path in which roles other than
 * owner (and superusers) can create objects: the flow evaluates under it.
 */
extern void settings_warn_unsafe_search_path(Oid owner);

#endif							/* FLOWPG_SETTINGS_H */
