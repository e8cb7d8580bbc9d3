/*-------------------------------------------------------------------------
 *
 * flow_locks.c
 *	  Every heavyweight lock flowpg takes for a flow: the name lock, the
 *	  flow lock, the modes of its sink and sources, flowpg's own tables,
 *	  and the worker's rule of taking them only when free.
 *
 * The lock order is at the top of flow_locks.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "commands/extension.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "flow_locks.h"

/* Lock tag class (field 4) of flow name locks; user advisory locks use 1 and 2. */
#define FLOWPG_NAME_LOCK_CLASS 0x464D

/*
 * Every table of flowpg's a worker's transaction touches, in the order
 * everyone takes them (flow first, as flow_lock_name does).
 */
static const char *const worker_tables[] = {"flow", "flow_run", "dirty_log", "table_dirty_log",
"table_dirty_seen", "flow_error", "pending_flow", "flow_backfill"};

/* Lock tag class (field 4) of flow refresh locks; user advisory locks use 1 and 2. */
#define FLOWPG_LOCK_CLASS 0x464C

#define SET_LOCKTAG_FLOW(tag, flow_id) \
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) ((flow_id) >> 32), \
						 (uint32) (flow_id), FLOWPG_LOCK_CLASS)

void
flow_lock(int64 flow_id)
{
	LOCKTAG		tag;

	SET_LOCKTAG_FLOW(tag, flow_id);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/* Does this transaction hold a lock of relid in mode or a stronger one? */
static bool
relation_locked_by_me(Oid relid, LOCKMODE weakest)
{
	LOCKTAG		tag;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
	for (LOCKMODE mode = weakest; mode <= AccessExclusiveLock; mode++)
		if (LockHeldByMe(&tag, mode))
			return true;
	return false;
}

bool
flow_locks_held_by_me(FlowEntry *entry)
{
	LOCKTAG		tag;
	ListCell   *lc;

	SET_LOCKTAG_FLOW(tag, entry->flow_id);
	if (LockHeldByMe(&tag, ExclusiveLock))
		return true;
	/* RowExclusive: this transaction may have written sink rows the flow's upserts meet */
	if (relation_locked_by_me(entry->sink_relid, RowExclusiveLock))
		return true;
	foreach(lc, entry->source_relids)
		if (relation_locked_by_me(lfirst_oid(lc), AccessExclusiveLock))
			return true;
	return false;
}

void
flow_limit_lock_waits(void)
{
	/* shorter than deadlock_timeout: a caller waiting for us gets the lock, not a deadlock error */
	int			ms = Max(Min(500, DeadlockTimeout / 2), 10);

	(void) set_config_option("lock_timeout", psprintf("%d", ms), PGC_SUSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
}

bool
flow_try_lock_tables(FlowEntry *entry)
{
	ListCell   *lc;

	if (!ConditionalLockRelationOid(entry->sink_relid, RowExclusiveLock))
		return false;
	foreach(lc, entry->source_relids)
		if (!ConditionalLockRelationOid(lfirst_oid(lc), AccessShareLock))
			return false;
	return true;
}

/* Takes the flow's refresh lock only when free; false when someone holds it. */
bool
flow_try_lock(int64 flow_id)
{
	LOCKTAG		tag;

	SET_LOCKTAG_FLOW(tag, flow_id);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/* Waits until nobody refreshes, replaces or drops the flow. */
void
flow_lock_wait(int64 flow_id)
{
	LOCKTAG		tag;

	SET_LOCKTAG_FLOW(tag, flow_id);
	if (LockAcquire(&tag, ExclusiveLock, false, false) == LOCKACQUIRE_OK)
		LockRelease(&tag, ExclusiveLock, false);
}

void
flow_lock_name(const char *flow_name)
{
	LOCKTAG		tag;
	uint32		hash = DatumGetUInt32(hash_any((const unsigned char *) flow_name,
											   strlen(flow_name)));

	/* RowExclusive on the catalog keeps DROP EXTENSION out meanwhile */
	LockRelationOid(catalog_relid(), RowExclusiveLock);
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, hash, 0, FLOWPG_NAME_LOCK_CLASS);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

bool
flow_locks_try_tables(LOCKMODE mode)
{
	Oid			nspid = get_namespace_oid("flowpg", true);

	if (!OidIsValid(nspid))
		return false;
	for (int i = 0; i < lengthof(worker_tables); i++)
	{
		Oid			relid = get_relname_relid(worker_tables[i], nspid);

		if (!OidIsValid(relid) || !ConditionalLockRelationOid(relid, mode))
			return false;
	}
	return true;
}

void
flow_locks_tables_or_busy(void)
{
	if (!flow_locks_try_tables(RowExclusiveLock))
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("flowpg's tables are locked by another session")));
}

void
flow_locks_before_drop_extension(Node *stmt)
{
	DropStmt   *drop = (DropStmt *) stmt;
	Oid			extoid;
	Oid			nspid;
	ListCell   *lc;
	List	   *relids = NIL;
	bool		ours = false;

	if (!IsA(stmt, DropStmt) || drop->removeType != OBJECT_EXTENSION)
		return;
	foreach(lc, drop->objects)
		ours |= strcmp(strVal(lfirst(lc)), "flowpg") == 0;
	extoid = get_extension_oid("flowpg", true);
	nspid = get_namespace_oid("flowpg", true);
	/* the lock queue is for who may drop it only */
	if (!ours || !OidIsValid(extoid) || !OidIsValid(nspid) ||
		!pg_extension_ownercheck(extoid, GetUserId()))
		return;
	/*
	 * The tables whose capture triggers and guards it drops come first: a
	 * writer holding one takes the dirty log next, so DROP must not hold
	 * the dirty log while it waits for that writer.
	 */
	foreach(lc, catalog_get_all())
	{
		FlowEntry  *entry = lfirst(lc);

		relids = list_concat(relids, entry->source_relids);
		relids = lappend_oid(relids, entry->sink_relid);
	}
	list_sort(relids, list_oid_cmp);
	list_deduplicate_oid(relids);
	foreach(lc, relids)
		LockRelationOid(lfirst_oid(lc), AccessExclusiveLock);
	for (int i = 0; i < lengthof(worker_tables); i++)
	{
		Oid			relid = get_relname_relid(worker_tables[i], nspid);

		if (OidIsValid(relid))
			LockRelationOid(relid, AccessExclusiveLock);
	}
}
