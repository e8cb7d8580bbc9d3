/*-------------------------------------------------------------------------
 *
 * visibility.c
 *	  What a flow's owner may see of its sources, changed after creation:
 *	  row-level security, table ownership, roles.
 *
 * A flow's sink holds what its owner may see of the sources.  A policy
 * created, altered or dropped, row-level security enabled, disabled or
 * forced, a table given to another owner, a membership granted or revoked,
 * BYPASSRLS or SUPERUSER changed: each changes what the owner sees without
 * any row changing, so no capture notices it.  The sink would keep rows the
 * owner may no longer see (or miss rows it now may) in every window no new
 * row touches.  So such a statement marks the flows concerned dirty as a
 * whole, in its own transaction: their next run recomputes every window
 * from the source as the owner sees it after the commit (in both engines:
 * a streaming flow also refills its state from that recompute, and its
 * writers send rows that policies filter to the recompute from then on).
 *
 * Statements on a table concern the flows reading it.  Role statements are
 * not of one database: here they concern the flows over tables with
 * row-level security enabled, and once they commit, the pool's roles epoch
 * tells the workers of every other database to do the same
 * (visibility_recheck_if_roles_changed).  A privilege revoked from the
 * owner is not this file's: the capture and the recompute then fail, and
 * the flow is shown failed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/namespace.h"
#include "nodes/makefuncs.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "catalog.h"
#include "privileged.h"
#include "dirty_log.h"
#include "pool.h"
#include "visibility.h"

static bool
row_security_enabled(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	bool		enabled = false;

	if (HeapTupleIsValid(tuple))
	{
		enabled = ((Form_pg_class) GETSTRUCT(tuple))->relrowsecurity;
		ReleaseSysCache(tuple);
	}
	return enabled;
}

/*
 * Marks dirty as a whole each flow that reads one of relids, or (any_rls)
 * a table with row-level security enabled.  Returns how many.
 */
static int
recompute_flows(List *relids, bool any_rls)
{
	ListCell   *lc;
	int			marked = 0;

	foreach(lc, catalog_get_all())
	{
		FlowEntry  *entry = lfirst(lc);
		ListCell   *lc2;

		foreach(lc2, entry->source_relids)
		{
			Oid			source = lfirst_oid(lc2);

			if (list_member_oid(relids, source) || (any_rls && row_security_enabled(source)))
			{
				dirty_log_append(entry->flow_id, true, 0, 0, 0);
				marked++;
				break;
			}
		}
	}
	return marked;
}

static Oid
table_of(RangeVar *rv)
{
	return rv ? RangeVarGetRelid(rv, NoLock, true) : InvalidOid;
}

void
visibility_after_utility(Node *stmt)
{
	List	   *relids = NIL;
	bool		roles = false;
	ListCell   *lc;

	switch (nodeTag(stmt))
	{
		case T_CreatePolicyStmt:
			relids = list_make1_oid(table_of(((CreatePolicyStmt *) stmt)->table));
			break;
		case T_AlterPolicyStmt:
			relids = list_make1_oid(table_of(((AlterPolicyStmt *) stmt)->table));
			break;
		case T_DropStmt:
			if (((DropStmt *) stmt)->removeType != OBJECT_POLICY)
				return;
			/* each object: the table's name, then the policy's */
			foreach(lc, ((DropStmt *) stmt)->objects)
			{
				List	   *names = (List *) lfirst(lc);

				relids = lappend_oid(relids,
									 table_of(makeRangeVarFromNameList(list_truncate(list_copy(names),
																					 list_length(names) - 1))));
			}
			break;
		case T_AlterTableStmt:
			foreach(lc, ((AlterTableStmt *) stmt)->cmds)
			{
				AlterTableType type = lfirst_node(AlterTableCmd, lc)->subtype;

				if (type == AT_EnableRowSecurity || type == AT_DisableRowSecurity ||
					type == AT_ForceRowSecurity || type == AT_NoForceRowSecurity ||
					type == AT_ChangeOwner)
				{
					relids = list_make1_oid(table_of(((AlterTableStmt *) stmt)->relation));
					break;
				}
			}
			if (relids == NIL)
				return;
			break;
		case T_GrantRoleStmt:
		case T_CreateRoleStmt:
		case T_AlterRoleStmt:
		case T_DropRoleStmt:
		case T_ReassignOwnedStmt:
		case T_DropOwnedStmt:
			roles = true;
			break;
		case T_RenameStmt:
			/* current_user in a policy: the owner's name */
			if (((RenameStmt *) stmt)->renameType != OBJECT_ROLE)
				return;
			roles = true;
			break;
		default:
			return;
	}
	if (roles)
		pool_note_roles_changed_at_commit();
	if (!IsTransactionState() || privileged_own_ddl || !catalog_exists())
		return;
	(void) recompute_flows(relids, roles);
}

bool
visibility_roles_changed(void)
{
	uint64		seen;

	return pool_roles_epoch(&seen) != seen;
}

void
visibility_recheck_if_roles_changed(void)
{
	uint64		seen;
	uint64		epoch = pool_roles_epoch(&seen);

	if (epoch == seen)
		return;
	if (catalog_exists())
		(void) recompute_flows(NIL, true);
	pool_set_roles_epoch_seen(epoch);
}
