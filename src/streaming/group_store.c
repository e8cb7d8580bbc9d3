/*-------------------------------------------------------------------------
 *
 * group_store.c
 *	  Where a streaming flow's groups live: a hash table in the state DSA
 *	  area (state_memory.c), so that any worker of the database can run the flow's
 *	  next round and a worker that exits leaves the state in place.
 *
 * A group is one allocation: its header (StoredGroup), a Datum and a flag
 * byte per aggregate, then its key as datum_write bytes.  Transition values
 * passed by value sit in the Datum; others in an allocation of their own
 * (internal states serialized with the aggregate's serialfn).  Aggregate
 * functions never see shared memory: store_load_trans hands out local
 * copies and store_save_trans copies the result back, so an error in a
 * user's function leaves every group whole.  Groups are found by the hash
 * of their key under the GROUP BY hash functions; equal bytes are equal
 * keys, other candidates with the same hash are compared with the GROUP BY
 * equality functions (1.0 and 1.00 are one group, as in the query).
 *
 * Locking: none of its own.  A flow's store is read and written only by the
 * worker that has claimed the flow (pool.c), one at a time, and only that
 * worker frees it; flow_stats reads the counters the worker publishes.  The
 * DSA area's own locks cover allocation.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "utils/datum.h"
#include "utils/memutils.h"

#include "group_store.h"
#include "state_memory.h"
#include "window.h"

#define STORE_MAGIC 0x666c6f77
#define INITIAL_BUCKETS 16		/* an empty flow holds little; buckets double */

typedef struct StoreHeader
{
	uint32		magic;
	int			naggs;
	int			nkeys;
	uint32		nbuckets;		/* a power of two */
	dsa_pointer buckets;
	dsa_pointer single;			/* the group of a query without GROUP BY */
	dsa_pointer changed_head;
	dsa_pointer changed_tail;
	int64		nchanged;
	int64		ngroups;
	int64		bytes;
	int			database;		/* its entry in the per-database counts (state_memory.c) */
} StoreHeader;

/* A transition value passed by reference. */
typedef struct StoredValue
{
	uint32		size;
	uint32		capacity;
	/* the bytes follow, MAXALIGNed */
} StoredValue;

#define VALUE_DATA(v) ((char *) (v) + MAXALIGN(sizeof(StoredValue)))

#define TRANS_NULL		0x01
#define TRANS_NOINIT	0x02
#define TRANS_UNSET		0x04	/* never set: the aggregate's initial state */
#define TRANS_ALLOC		0x08	/* the Datum is a StoredValue's dsa_pointer */

struct GroupStore
{
	dsa_area   *area;
	dsa_pointer dp;
	StoreHeader *header;
	StreamGraph *graph;
	MemoryContext memory;		/* the handle */
	MemoryContext local;		/* copies of values, reset by the caller */
	AggContext *aggcxt;
	FmgrInfo   *eqfns;
	StringInfoData keybuf;
	Size		group_fixed;	/* header + values + flags, MAXALIGNed */
};

static void *
store_alloc(GroupStore *store, Size size, dsa_pointer *dp)
{
	*dp = state_memory_admit(store->header->database, size) ?
		dsa_allocate_extended(store->area, size, DSA_ALLOC_NO_OOM) : InvalidDsaPointer;
	if (!DsaPointerIsValid(*dp))
		state_memory_note_refusal();
	if (!DsaPointerIsValid(*dp))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("flowpg.state_memory is exhausted"),
				 errdetail("A streaming flow's state needs more shared memory than flowpg.state_memory allows."),
				 errhint("Raise flowpg.state_memory, or give the flow an expire_after; "
						 "its oldest windows are recomputed from the source meanwhile.")));
	store->header->bytes += size;
	state_memory_charge(store->header->database, size);
	return dsa_get_address(store->area, *dp);
}

static void
store_free(GroupStore *store, dsa_pointer dp, Size size)
{
	dsa_free(store->area, dp);
	store->header->bytes -= size;
	state_memory_charge(store->header->database, -(int64) size);
}

dsa_pointer
store_create(StreamGraph *graph)
{
	dsa_area   *area = state_memory_area();
	int			database = state_memory_database(MyDatabaseId);
	Size		size = sizeof(StoreHeader) + sizeof(dsa_pointer) * INITIAL_BUCKETS;
	dsa_pointer dp;
	dsa_pointer buckets;
	StoreHeader *header;

	if (!state_memory_admit(database, size))
		return InvalidDsaPointer;
	dp = dsa_allocate_extended(area, sizeof(StoreHeader), DSA_ALLOC_NO_OOM | DSA_ALLOC_ZERO);
	if (!DsaPointerIsValid(dp))
	{
		state_memory_note_refusal();
		return InvalidDsaPointer;
	}
	buckets = dsa_allocate_extended(area, sizeof(dsa_pointer) * INITIAL_BUCKETS,
									DSA_ALLOC_NO_OOM | DSA_ALLOC_ZERO);
	if (!DsaPointerIsValid(buckets))
	{
		dsa_free(area, dp);
		state_memory_note_refusal();
		return InvalidDsaPointer;
	}
	header = dsa_get_address(area, dp);
	header->magic = STORE_MAGIC;
	header->naggs = graph->naggs;
	header->nkeys = graph->nkeys;
	header->nbuckets = INITIAL_BUCKETS;
	header->buckets = buckets;
	header->single = InvalidDsaPointer;
	header->changed_head = header->changed_tail = InvalidDsaPointer;
	header->bytes = size;
	header->database = database;
	state_memory_charge(database, size);
	return dp;
}

GroupStore *
store_attach(dsa_pointer dp, StreamGraph *graph, MemoryContext memory)
{
	MemoryContext old = MemoryContextSwitchTo(memory);
	GroupStore *store = palloc0(sizeof(GroupStore));

	store->area = state_memory_area();
	store->dp = dp;
	store->header = dsa_get_address(store->area, dp);
	if (store->header->magic != STORE_MAGIC || store->header->naggs != graph->naggs ||
		store->header->nkeys != graph->nkeys)
		elog(ERROR, "flowpg: the shared state does not match its flow");
	store->graph = graph;
	store->memory = memory;
	store->local = AllocSetContextCreate(memory, "flowpg state copies", ALLOCSET_DEFAULT_SIZES);
	store->aggcxt = agg_context_create_in(memory, store->local);
	store->eqfns = palloc(sizeof(FmgrInfo) * Max(graph->nkeys, 1));
	for (int k = 0; k < graph->nkeys; k++)
		fmgr_info(graph->key_eqfuncs[k], &store->eqfns[k]);
	initStringInfo(&store->keybuf);
	store->group_fixed = MAXALIGN(sizeof(StoredGroup) + (sizeof(Datum) + 1) * graph->naggs);
	MemoryContextSwitchTo(old);
	return store;
}

void
store_detach(GroupStore *store)
{
	MemoryContextDelete(store->local);
	pfree(store->eqfns);
	pfree(store->keybuf.data);
	pfree(store);
}

void
store_counters_at(dsa_pointer dp, int64 *groups, int64 *bytes)
{
	StoreHeader *header;

	*groups = *bytes = 0;
	if (!DsaPointerIsValid(dp))
		return;
	header = dsa_get_address(state_memory_area(), dp);
	*groups = header->ngroups;
	*bytes = header->bytes;
}

AggContext *
store_agg_context(GroupStore *store)
{
	return store->aggcxt;
}

void
store_reset_local(GroupStore *store)
{
	MemoryContextReset(store->local);
}

static inline Datum *
group_values(StoredGroup *group)
{
	return (Datum *) ((char *) group + sizeof(StoredGroup));
}

static inline uint8 *
group_trans_flags(StoredGroup *group, int naggs)
{
	return (uint8 *) (group_values(group) + naggs);
}

static inline char *
group_key(GroupStore *store, StoredGroup *group)
{
	return (char *) group + store->group_fixed;
}

/* The by-reference values of a group and then the group itself. */
static Size
free_group_in(dsa_area *area, dsa_pointer dp, StoredGroup *group, int naggs, Size fixed)
{
	uint8	   *flags = group_trans_flags(group, naggs);
	Size		freed = fixed + group->keylen;

	for (int i = 0; i < naggs; i++)
	{
		if (flags[i] & TRANS_ALLOC)
		{
			dsa_pointer vdp = (dsa_pointer) group_values(group)[i];
			StoredValue *v = dsa_get_address(area, vdp);

			freed += MAXALIGN(sizeof(StoredValue)) + v->capacity;
			dsa_free(area, vdp);
		}
	}
	dsa_free(area, dp);
	return freed;
}

static void
free_group(GroupStore *store, dsa_pointer dp, StoredGroup *group)
{
	Size		freed = free_group_in(store->area, dp, group, store->graph->naggs,
									  store->group_fixed);

	store->header->bytes -= freed;
	state_memory_charge(store->header->database, -(int64) freed);
	store->header->ngroups--;
}

static uint32
key_hash(GroupStore *store)
{
	StreamGraph *graph = store->graph;
	TupleTableSlot *slot = graph->key_slot;
	uint32		hash = 0;

	for (int k = 0; k < graph->nkeys; k++)
	{
		hash = pg_rotate_left32(hash, 1);
		if (!slot->tts_isnull[k])
			hash ^= DatumGetUInt32(FunctionCall1Coll(&graph->key_hashfns[k],
													 graph->key_collations[k],
													 slot->tts_values[k]));
	}
	return murmurhash32(hash);
}

static void
serialize_key(GroupStore *store)
{
	StreamGraph *graph = store->graph;
	TupleTableSlot *slot = graph->key_slot;

	resetStringInfo(&store->keybuf);
	for (int k = 0; k < graph->nkeys; k++)
	{
		Form_pg_attribute attr = TupleDescAttr(graph->key_desc, k);

		datum_write(&store->keybuf, slot->tts_values[k], slot->tts_isnull[k],
					attr->attbyval, attr->attlen);
	}
}

/* Same group under the GROUP BY equality (for keys whose bytes differ). */
static bool
keys_equal(GroupStore *store, StoredGroup *group)
{
	StreamGraph *graph = store->graph;
	TupleTableSlot *slot = graph->key_slot;
	char	   *cursor = group_key(store, group);
	MemoryContext old = MemoryContextSwitchTo(store->local);
	bool		equal = true;

	for (int k = 0; k < graph->nkeys && equal; k++)
	{
		bool		isnull;
		Datum		value = datum_read(&cursor, &isnull);

		if (isnull || slot->tts_isnull[k])
			equal = isnull && slot->tts_isnull[k];
		else
			equal = DatumGetBool(FunctionCall2Coll(&store->eqfns[k], graph->key_collations[k],
												   value, slot->tts_values[k]));
	}
	MemoryContextSwitchTo(old);
	return equal;
}

static void
grow_buckets(GroupStore *store)
{
	StoreHeader *header = store->header;
	uint32		nbuckets = header->nbuckets * 2;
	dsa_pointer newdp;
	dsa_pointer *old_buckets = dsa_get_address(store->area, header->buckets);
	dsa_pointer *buckets;

	if (!state_memory_admit(header->database, sizeof(dsa_pointer) * header->nbuckets))
		return;					/* longer chains, still correct */
	newdp = dsa_allocate_extended(store->area, sizeof(dsa_pointer) * nbuckets,
								  DSA_ALLOC_NO_OOM | DSA_ALLOC_ZERO | DSA_ALLOC_HUGE);
	if (!DsaPointerIsValid(newdp))
		return;					/* longer chains, still correct */
	buckets = dsa_get_address(store->area, newdp);
	for (uint32 b = 0; b < header->nbuckets; b++)
	{
		dsa_pointer dp = old_buckets[b];

		while (DsaPointerIsValid(dp))
		{
			StoredGroup *group = dsa_get_address(store->area, dp);
			dsa_pointer next = group->next;
			uint32		nb = group->hash & (nbuckets - 1);

			group->next = buckets[nb];
			buckets[nb] = dp;
			dp = next;
		}
	}
	dsa_free(store->area, header->buckets);
	header->bytes += sizeof(dsa_pointer) * header->nbuckets;
	state_memory_charge(header->database, sizeof(dsa_pointer) * header->nbuckets);
	header->buckets = newdp;
	header->nbuckets = nbuckets;
}

static StoredGroup *
new_group(GroupStore *store, uint32 hash, dsa_pointer *dp)
{
	StreamGraph *graph = store->graph;
	TupleTableSlot *slot = graph->key_slot;
	StoredGroup *group = store_alloc(store, store->group_fixed + store->keybuf.len, dp);
	uint8	   *flags = group_trans_flags(group, graph->naggs);

	group->self = *dp;
	group->next = InvalidDsaPointer;
	group->next_changed = InvalidDsaPointer;
	group->hash = hash;
	group->keylen = store->keybuf.len;
	group->flags = STORED_WNULL;
	group->window = 0;
	group->time_lo = PG_INT64_MAX;
	group->time_hi = PG_INT64_MIN;
	if (graph->window_key >= 0 && !slot->tts_isnull[graph->window_key])
	{
		group->flags = 0;
		group->window = window_datum_to_ordinal(TupleDescAttr(graph->key_desc, graph->window_key)->atttypid,
												slot->tts_values[graph->window_key]);
	}
	/* no value yet: the initial state is made when it is first loaded */
	for (int i = 0; i < graph->naggs; i++)
	{
		group_values(group)[i] = (Datum) 0;
		flags[i] = TRANS_UNSET;
	}
	memcpy(group_key(store, group), store->keybuf.data, store->keybuf.len);
	store->header->ngroups++;
	return group;
}

StoredGroup *
store_lookup(GroupStore *store, bool create)
{
	StoreHeader *header = store->header;
	dsa_pointer *buckets;
	uint32		hash;
	dsa_pointer dp;
	StoredGroup *group;

	if (store->graph->nkeys == 0)
	{
		if (!DsaPointerIsValid(header->single) && create)
		{
			resetStringInfo(&store->keybuf);
			group = new_group(store, 0, &dp);
			header->single = dp;
		}
		return DsaPointerIsValid(header->single) ?
			dsa_get_address(store->area, header->single) : NULL;
	}
	hash = key_hash(store);
	serialize_key(store);
	if (store->keybuf.len > PG_UINT16_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a streaming flow's group key cannot exceed %d bytes", PG_UINT16_MAX),
				 errhint("Use mode => 'batching' for flows that group by large values.")));
	buckets = dsa_get_address(store->area, header->buckets);
	for (dp = buckets[hash & (header->nbuckets - 1)]; DsaPointerIsValid(dp); dp = group->next)
	{
		group = dsa_get_address(store->area, dp);
		if (group->hash != hash)
			continue;
		if (group->keylen == store->keybuf.len &&
			memcmp(group_key(store, group), store->keybuf.data, group->keylen) == 0)
			return group;
		if (keys_equal(store, group))
			return group;
	}
	if (!create)
		return NULL;
	group = new_group(store, hash, &dp);
	buckets = dsa_get_address(store->area, header->buckets);
	group->next = buckets[hash & (header->nbuckets - 1)];
	buckets[hash & (header->nbuckets - 1)] = dp;
	if (header->ngroups > header->nbuckets)
		grow_buckets(store);
	return group;
}

void
store_load_key(GroupStore *store, StoredGroup *group)
{
	StreamGraph *graph = store->graph;
	TupleTableSlot *slot = graph->key_slot;
	char	   *cursor = group_key(store, group);
	MemoryContext old = MemoryContextSwitchTo(store->local);

	ExecClearTuple(slot);
	for (int k = 0; k < graph->nkeys; k++)
		slot->tts_values[k] = datum_read(&cursor, &slot->tts_isnull[k]);
	ExecStoreVirtualTuple(slot);
	MemoryContextSwitchTo(old);
}

void
store_load_trans(GroupStore *store, StoredGroup *group, AggTrans *trans)
{
	StreamGraph *graph = store->graph;
	uint8	   *flags = group_trans_flags(group, graph->naggs);
	MemoryContext old = MemoryContextSwitchTo(store->local);

	for (int i = 0; i < graph->naggs; i++)
	{
		AggSupport *agg = &graph->aggs[i];
		StoredValue *v;

		if (flags[i] & TRANS_UNSET)
		{
			agg_init_trans(store->aggcxt, agg, 1, &trans[i]);
			continue;
		}
		trans[i].isnull = (flags[i] & TRANS_NULL) != 0;
		trans[i].noinit = (flags[i] & TRANS_NOINIT) != 0;
		trans[i].value = (Datum) 0;
		if (!(flags[i] & TRANS_ALLOC))
		{
			if (!trans[i].isnull)
				trans[i].value = group_values(group)[i];
			continue;
		}
		v = dsa_get_address(store->area, (dsa_pointer) group_values(group)[i]);
		if (agg->transtype == INTERNALOID)
		{
			char	   *cursor = VALUE_DATA(v);
			bool		isnull;

			trans[i].value = agg_deserialize(store->aggcxt, agg, &cursor, &isnull);
		}
		else
		{
			char	   *copy = palloc(v->size);

			memcpy(copy, VALUE_DATA(v), v->size);
			trans[i].value = PointerGetDatum(copy);
		}
	}
	MemoryContextSwitchTo(old);
}

void
store_save_trans(GroupStore *store, StoredGroup *group, AggTrans *trans)
{
	StreamGraph *graph = store->graph;
	uint8	   *flags = group_trans_flags(group, graph->naggs);
	MemoryContext old = MemoryContextSwitchTo(store->local);
	StringInfoData buf;

	buf.data = NULL;
	for (int i = 0; i < graph->naggs; i++)
	{
		AggSupport *agg = &graph->aggs[i];
		uint8		newflags = (trans[i].isnull ? TRANS_NULL : 0) |
			(trans[i].noinit ? TRANS_NOINIT : 0);
		dsa_pointer olddp = (dsa_pointer) group_values(group)[i];
		StoredValue *v = NULL;
		const char *bytes;
		Size		size;

		if (flags[i] & TRANS_ALLOC)
			v = dsa_get_address(store->area, olddp);
		if (trans[i].isnull || (agg->transbyval && agg->transtype != INTERNALOID))
		{
			if (v != NULL)
				store_free(store, olddp, MAXALIGN(sizeof(StoredValue)) + v->capacity);
			group_values(group)[i] = trans[i].isnull ? (Datum) 0 : trans[i].value;
			flags[i] = newflags;
			continue;
		}
		if (agg->transtype == INTERNALOID)
		{
			if (buf.data == NULL)
				initStringInfo(&buf);
			resetStringInfo(&buf);
			agg_serialize(store->aggcxt, agg, &trans[i], &buf);
			bytes = buf.data;
			size = buf.len;
		}
		else
		{
			Datum		value = trans[i].value;

			if (agg->translen == -1)
				value = PointerGetDatum(PG_DETOAST_DATUM(value));
			bytes = DatumGetPointer(value);
			size = datumGetSize(value, false, agg->translen);
		}
		if (v == NULL || v->capacity < size)
		{
			dsa_pointer newdp;
			StoredValue *nv = store_alloc(store, MAXALIGN(sizeof(StoredValue)) + size, &newdp);

			nv->capacity = size;
			if (v != NULL)
				store_free(store, olddp, MAXALIGN(sizeof(StoredValue)) + v->capacity);
			v = nv;
			group_values(group)[i] = (Datum) newdp;
		}
		v->size = size;
		memcpy(VALUE_DATA(v), bytes, size);
		flags[i] = newflags | TRANS_ALLOC;
	}
	MemoryContextSwitchTo(old);
}

void
store_mark_changed(GroupStore *store, StoredGroup *group)
{
	StoreHeader *header = store->header;

	if (group->flags & STORED_CHANGED)
		return;
	group->flags |= STORED_CHANGED;
	group->next_changed = InvalidDsaPointer;
	if (DsaPointerIsValid(header->changed_tail))
		((StoredGroup *) dsa_get_address(store->area, header->changed_tail))->next_changed = group->self;
	else
		header->changed_head = group->self;
	header->changed_tail = group->self;
	header->nchanged++;
}

bool
store_has_changed(GroupStore *store)
{
	return DsaPointerIsValid(store->header->changed_head);
}

bool
store_has_changed_at(dsa_pointer dp)
{
	StoreHeader *header = dsa_get_address(state_memory_area(), dp);

	return DsaPointerIsValid(header->changed_head);
}

/* How many groups are marked changed (0: none), in a store given by pointer. */
int64
store_changed_count_at(dsa_pointer dp)
{
	StoreHeader *header;

	if (!DsaPointerIsValid(dp))
		return 0;
	header = dsa_get_address(state_memory_area(), dp);
	return DsaPointerIsValid(header->changed_head) ? Max(header->nchanged, 1) : 0;
}

List *
store_changed_list(GroupStore *store)
{
	List	   *groups = NIL;
	dsa_pointer dp = store->header->changed_head;

	while (DsaPointerIsValid(dp))
	{
		StoredGroup *group = dsa_get_address(store->area, dp);

		groups = lappend(groups, group);
		dp = group->next_changed;
	}
	return groups;
}

void
store_clear_changed(GroupStore *store)
{
	StoreHeader *header = store->header;
	dsa_pointer dp = header->changed_head;

	while (DsaPointerIsValid(dp))
	{
		StoredGroup *group = dsa_get_address(store->area, dp);

		dp = group->next_changed;
		group->next_changed = InvalidDsaPointer;
		group->flags &= ~STORED_CHANGED;
	}
	header->changed_head = header->changed_tail = InvalidDsaPointer;
	header->nchanged = 0;
}

StoredGroup *
store_next(GroupStore *store, StoreIterator *iter)
{
	StoreHeader *header = store->header;
	dsa_pointer *buckets;

	if (store->graph->nkeys == 0)
	{
		if (iter->started)
			return NULL;
		iter->started = true;
		return DsaPointerIsValid(header->single) ?
			dsa_get_address(store->area, header->single) : NULL;
	}
	buckets = dsa_get_address(store->area, header->buckets);
	if (!iter->started)
	{
		iter->started = true;
		iter->bucket = 0;
		iter->next = buckets[0];
	}
	while (!DsaPointerIsValid(iter->next))
	{
		if (++iter->bucket >= header->nbuckets)
			return NULL;
		iter->next = buckets[iter->bucket];
	}
	{
		StoredGroup *group = dsa_get_address(store->area, iter->next);

		iter->next = group->next;
		return group;
	}
}

/* Deletes groups, then links the changed ones that are left again. */
void
store_delete_where(GroupStore *store, StoreFilter drop, void *arg)
{
	StoreHeader *header = store->header;
	dsa_pointer *buckets;
	dsa_pointer changed_tail = InvalidDsaPointer;

	header->changed_head = InvalidDsaPointer;
	header->nchanged = 0;
	if (store->graph->nkeys == 0)
	{
		if (DsaPointerIsValid(header->single))
		{
			StoredGroup *group = dsa_get_address(store->area, header->single);

			if (drop(group, arg))
			{
				free_group(store, header->single, group);
				header->single = InvalidDsaPointer;
			}
			else if (group->flags & STORED_CHANGED)
			{
				group->next_changed = InvalidDsaPointer;
				header->changed_head = changed_tail = header->single;
				header->nchanged = 1;
			}
		}
		header->changed_tail = changed_tail;
		return;
	}
	buckets = dsa_get_address(store->area, header->buckets);
	for (uint32 b = 0; b < header->nbuckets; b++)
	{
		dsa_pointer *link = &buckets[b];

		while (DsaPointerIsValid(*link))
		{
			dsa_pointer dp = *link;
			StoredGroup *group = dsa_get_address(store->area, dp);

			if (drop(group, arg))
			{
				*link = group->next;
				free_group(store, dp, group);
				continue;
			}
			if (group->flags & STORED_CHANGED)
			{
				group->next_changed = InvalidDsaPointer;
				if (DsaPointerIsValid(changed_tail))
					((StoredGroup *) dsa_get_address(store->area, changed_tail))->next_changed = dp;
				else
					header->changed_head = dp;
				changed_tail = dp;
				header->nchanged++;
			}
			link = &group->next;
		}
	}
	header->changed_tail = changed_tail;
}

void
store_drop_group(GroupStore *store, StoredGroup *group)
{
	StoreHeader *header = store->header;
	dsa_pointer *link;

	Assert(!(group->flags & STORED_CHANGED));
	if (store->graph->nkeys == 0)
	{
		free_group(store, header->single, group);
		header->single = InvalidDsaPointer;
		return;
	}
	link = &((dsa_pointer *) dsa_get_address(store->area, header->buckets))
		[group->hash & (header->nbuckets - 1)];
	while (DsaPointerIsValid(*link))
	{
		if (*link == group->self)
		{
			*link = group->next;
			free_group(store, group->self, group);
			return;
		}
		link = &((StoredGroup *) dsa_get_address(store->area, *link))->next;
	}
	elog(ERROR, "flowpg: group to drop not found in its bucket");
}

static bool
drop_all(StoredGroup *group, void *arg)
{
	return true;
}

void
store_clear(GroupStore *store)
{
	store_delete_where(store, drop_all, NULL);
}

int64
store_groups(GroupStore *store)
{
	return store->header->ngroups;
}

void
store_destroy(dsa_pointer dp)
{
	dsa_area   *area = state_memory_area();
	StoreHeader *header = dsa_get_address(area, dp);
	Size		fixed = MAXALIGN(sizeof(StoredGroup) + (sizeof(Datum) + 1) * header->naggs);
	dsa_pointer *buckets = dsa_get_address(area, header->buckets);

	if (DsaPointerIsValid(header->single))
		(void) free_group_in(area, header->single,
							 dsa_get_address(area, header->single), header->naggs, fixed);
	for (uint32 b = 0; b < header->nbuckets; b++)
	{
		dsa_pointer gdp = buckets[b];

		while (DsaPointerIsValid(gdp))
		{
			StoredGroup *group = dsa_get_address(area, gdp);
			dsa_pointer next = group->next;

			(void) free_group_in(area, gdp, group, header->naggs, fixed);
			gdp = next;
		}
	}
	state_memory_charge(header->database, -header->bytes);
	header->magic = 0;
	dsa_free(area, header->buckets);
	dsa_free(area, dp);
}
