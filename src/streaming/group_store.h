/*-------------------------------------------------------------------------
 *
 * group_store.h
 *	  The shared state of a streaming flow: its groups and their transition
 *	  values, in a hash table in flowpg's state DSA area.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_GROUP_STORE_H
#define FLOWPG_GROUP_STORE_H

#include "utils/dsa.h"

#include "operator.h"

/* A group in shared memory (the transition values and key follow it). */
typedef struct StoredGroup
{
	dsa_pointer self;
	dsa_pointer next;			/* hash chain */
	dsa_pointer next_changed;	/* the list of groups not yet in the sink */
	uint32		hash;
	uint16		keylen;
	uint8		flags;			/* STORED_* */
	uint8		padding;
	int64		window;			/* ordinal of the window key, unless WNULL */
	int64		time_lo;		/* time ordinals of the rows seen */
	int64		time_hi;
} StoredGroup;

#define STORED_CHANGED	0x01
#define STORED_IN_SINK	0x02
#define STORED_WNULL	0x04	/* no window key, or a NULL one */
#define STORED_STALE	0x08	/* a retraction it could not take: recomputed, not written */
#define STORED_REGROUP	0x10	/* being recomputed from its rows (stream_refill_groups) */

typedef struct GroupStore GroupStore;

typedef struct StoreIterator
{
	uint32		bucket;
	dsa_pointer next;
	bool		started;
} StoreIterator;

/* A new empty store for the graph's groups; InvalidDsaPointer when full. */
extern dsa_pointer store_create(StreamGraph *graph);

/* A handle on a store (in memory, which holds the local copies). */
extern GroupStore *store_attach(dsa_pointer dp, StreamGraph *graph, MemoryContext memory);
extern void store_destroy(dsa_pointer dp);

/* Frees a handle (not the store). */
extern void store_detach(GroupStore *store);

/* A store's groups and bytes, from shared memory (0 when dp is invalid). */
extern void store_counters_at(dsa_pointer dp, int64 *groups, int64 *bytes);

/* Drops every group. */
extern void store_clear(GroupStore *store);

/*
 * The group whose key is in graph->key_slot; created when asked (ERROR
 * when flowpg.state_memory is exhausted).
 */
extern StoredGroup *store_lookup(GroupStore *store, bool create);

/* The group's key into graph->key_slot. */
extern void store_load_key(GroupStore *store, StoredGroup *group);

/* Local copies of a group's transition values (in the store's AggContext). */
extern void store_load_trans(GroupStore *store, StoredGroup *group, AggTrans *trans);

/* Writes back the transition values (copies: no function runs on shared memory). */
extern void store_save_trans(GroupStore *store, StoredGroup *group, AggTrans *trans);

/* The local memory the copies live in, for aggregate calls. */
extern AggContext *store_agg_context(GroupStore *store);

/* Resets the local copies. */
extern void store_reset_local(GroupStore *store);

extern void store_mark_changed(GroupStore *store, StoredGroup *group);

/* The changed groups, oldest change first (they stay marked). */
extern List *store_changed_list(GroupStore *store);

/* No group is marked changed any more (their changes are in the sink). */
extern void store_clear_changed(GroupStore *store);
extern bool store_has_changed(GroupStore *store);
extern bool store_has_changed_at(dsa_pointer dp);
extern int64 store_changed_count_at(dsa_pointer dp);

/* Visits every group: zeroed iterator, stop at NULL. */
extern StoredGroup *store_next(GroupStore *store, StoreIterator *iter);

/* Deletes the groups drop() accepts. */
typedef bool (*StoreFilter) (StoredGroup *group, void *arg);
extern void store_delete_where(GroupStore *store, StoreFilter drop, void *arg);

/* Deletes one group, which must not be marked changed. */
extern void store_drop_group(GroupStore *store, StoredGroup *group);

extern int64 store_groups(GroupStore *store);

#endif							/* FLOWPG_GROUP_STORE_H */
