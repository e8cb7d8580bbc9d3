/*-------------------------------------------------------------------------
 *
 * capture_graphs.c
 *	  A writer's compiled operator graphs of the streaming flows it feeds.
 *
 * The graph of a flow is compiled once per backend (as the flow's owner,
 * whose privileges its functions run with here too) and rebuilt when the
 * flow's definition changes; a graph replaced during a transaction stays
 * until the transaction ends, since a partial may still use it.  The
 * owner's rights are rechecked after a change of ACLs, policies, roles or
 * functions.
 *
 * Whether a transaction ships its rows or partial groups
 * (flowpg.streaming_ship = auto) is measured per flow here: rows pay while
 * a flow's transactions bring nearly a group per row, so a transaction in
 * groups every SHIP_REMEASURE gives the ratio, and rows are shipped while
 * it is at least SHIP_ROWS_RATIO.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "capture_graphs.h"
#include "catalog.h"
#include "guc.h"
#include "settings.h"

#define SHIP_ROWS_RATIO 0.75
#define SHIP_REMEASURE 32

typedef struct RelationMap
{
	Oid			relid;
	AttrNumber *map;
} RelationMap;

static HTAB *graph_cache = NULL;
static MemoryContext graph_cache_memory = NULL;
static List *retired_graphs = NIL;	/* replaced while a partial may use them */

/* Rights and policies of flows reading relid (all: InvalidOid) need a recheck. */
static void
forget_rights(Oid relid)
{
	HASH_SEQ_STATUS status;
	GraphCacheEntry *entry;

	if (graph_cache == NULL)
		return;
	hash_seq_init(&status, graph_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
		if (!OidIsValid(relid) || list_member_oid(entry->graph->plan->source_relids, relid))
			entry->rights_checked = false;
}

/* GRANT / REVOKE on a table and its policies change its relcache entry. */
static void
rights_relcache_callback(Datum arg, Oid relid)
{
	forget_rights(relid);
}

/* Roles, memberships, function ACLs: any flow may be concerned. */
static void
rights_syscache_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	forget_rights(InvalidOid);
}

static void
create_cache(void)
{
	HASHCTL		ctl;

	graph_cache_memory = AllocSetContextCreate(TopMemoryContext, "flowpg graphs",
											   ALLOCSET_SMALL_SIZES);
	ctl.keysize = sizeof(int64);
	ctl.entrysize = sizeof(GraphCacheEntry);
	ctl.hcxt = graph_cache_memory;
	graph_cache = hash_create("flowpg graphs", 16, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	CacheRegisterRelcacheCallback(rights_relcache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHOID, rights_syscache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, rights_syscache_callback, (Datum) 0);
	CacheRegisterSyscacheCallback(PROCOID, rights_syscache_callback, (Datum) 0);
}

StreamGraph *
capture_graph_cached(int64 flow_id, uint32 version)
{
	GraphCacheEntry *entry;

	if (graph_cache == NULL)
		return NULL;
	entry = hash_search(graph_cache, &flow_id, HASH_FIND, NULL);
	return entry && entry->graph->version == version ? entry->graph : NULL;
}

GraphCacheEntry *
capture_graph_get(int64 flow_id, uint32 version)
{
	GraphCacheEntry *entry;
	bool		found;
	FlowEntry  *flow;
	FlowIdentity identity;
	StreamGraph *graph;
	MemoryContext old;

	if (graph_cache == NULL)
		create_cache();
	entry = hash_search(graph_cache, &flow_id, HASH_FIND, NULL);
	if (entry && entry->graph->version == version)
		return entry;

	flow = catalog_get_by_id(flow_id);
	if (flow == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("flowpg: flow %lld disappeared", (long long) flow_id)));
	flow_enter(&identity, flow->owner, flow->settings, false);
	graph = graph_build(flow, graph_cache_memory);
	flow_leave(&identity);

	old = MemoryContextSwitchTo(graph_cache_memory);
	entry = hash_search(graph_cache, &flow_id, HASH_ENTER, &found);
	if (found)
	{
		retired_graphs = lappend(retired_graphs, entry->graph);
		list_free_deep(entry->maps);
		if (entry->settings)
			pfree(entry->settings);
	}
	entry->graph = graph;
	entry->rights_checked = false;
	entry->rows_pay = true;		/* until a transaction in groups says otherwise */
	entry->since_measure = 0;
	entry->owner = flow->owner;
	entry->settings = flow->settings ?
		DatumGetArrayTypePCopy(PointerGetDatum(flow->settings)) : NULL;
	entry->maps = NIL;
	MemoryContextSwitchTo(old);
	return entry;
}

AttrNumber *
capture_graph_map(GraphCacheEntry *entry, Relation rel)
{
	ListCell   *lc;
	RelationMap *rm;
	MemoryContext old;

	foreach(lc, entry->maps)
	{
		rm = lfirst(lc);
		if (rm->relid == RelationGetRelid(rel))
			return rm->map;
	}
	old = MemoryContextSwitchTo(graph_cache_memory);
	rm = palloc(sizeof(RelationMap));
	rm->relid = RelationGetRelid(rel);
	rm->map = graph_column_map(entry->graph, rel);
	entry->maps = lappend(entry->maps, rm);
	MemoryContextSwitchTo(old);
	return rm->map;
}

bool
capture_graph_ship_rows(GraphCacheEntry *entry)
{
	if (flowpg_streaming_ship != STREAMING_SHIP_AUTO)
		return flowpg_streaming_ship == STREAMING_SHIP_ROWS;
	if (entry->rows_pay && entry->since_measure < SHIP_REMEASURE)
	{
		entry->since_measure++;
		return true;
	}
	entry->since_measure = 0;
	return false;
}

void
capture_graph_measure(int64 flow_id, StreamGraph *graph, int64 entries, int64 naccepted)
{
	GraphCacheEntry *entry;

	if (naccepted == 0 || graph_cache == NULL)
		return;
	entry = hash_search(graph_cache, &flow_id, HASH_FIND, NULL);
	if (entry == NULL || entry->graph != graph)
		return;
	entry->rows_pay = (double) entries >= SHIP_ROWS_RATIO * naccepted;
	entry->since_measure = 0;
}

void
capture_graphs_free_retired(void)
{
	ListCell   *lc;

	foreach(lc, retired_graphs)
		graph_free(lfirst(lc));
	list_free(retired_graphs);
	retired_graphs = NIL;
}
