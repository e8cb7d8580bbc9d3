/*-------------------------------------------------------------------------
 *
 * flow_deps.h
 *	  A flow's dependency view.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_FLOW_DEPS_H
#define FLOWPG_FLOW_DEPS_H

#include "utils/array.h"

#include "catalog.h"

/*
 * Creates the view flowpg_flows.<flow_name> over the flow's canonical query,
 * which makes PostgreSQL record the flow's dependencies, and makes it
 * depend on the sink (deps_record_sink); returns its OID.
 */
extern Oid	deps_create(const char *flow_name, const char *query, ArrayType *settings,
						Oid sink_relid);

/*
 * Records that the flow's dependency view depends on its sink table, so
 * that DROP TABLE of the sink is refused without CASCADE; false when it was
 * recorded already.
 */
extern bool deps_record_sink(Oid deps_view, Oid sink_relid);

/* Drops a flow's dependency view, if it still exists. */
extern void deps_drop(FlowEntry *entry);

#endif							/* FLOWPG_FLOW_DEPS_H */
