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
 * made meanwhile (by the flow's own functions, say); search_path is always
 * pinned to pg_catalog, pg_temp (stored trees hold OIDs, so only deparsing
 * and re-planning look names up, and they must not depend on the caller).
 */
extern int	flow_settings_push(ArrayType *settings);
extern void flow_settings_pop(int nestlevel);

/* Only search_path = pg_catalog, pg_temp, until flow_settings_pop. */
extern int	settings_push_safe_search_path(void);

#endif							/* FLOWPG_SETTINGS_H */
