/*-------------------------------------------------------------------------
 *
 * flowpg.c
 *	  Entry point of the flowpg extension: module load and its settings.
 *
 * flowpg must be loaded through shared_preload_libraries because its
 * engines own shared memory and background workers.  A backend that loads
 * the library later (CREATE EXTENSION in a server without the preload) gets
 * the SQL objects, but creating a flow there fails with a hint.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "commands/dbcommands.h"
#include "tcop/utility.h"
#include "utils/guc.h"

#include "catalog.h"
#include "flow_locks.h"
#include "visibility.h"
#include "ddl_events.h"
#include "flowpg.h"
#include "guc.h"
#include "pool.h"
#include "preload.h"
#include "progress.h"
#include "shmem.h"
#include "dirty_log.h"
#include "stream_state.h"
#include "worker.h"

PG_MODULE_MAGIC;

static ProcessUtility_hook_type prev_process_utility_hook = NULL;

void		_PG_init(void);

/* What flowpg must see before some utility commands run. */
static void
flowpg_process_utility(PlannedStmt *pstmt, const char *queryString,
					   bool readOnlyTree, ProcessUtilityContext context,
					   ParamListInfo params, QueryEnvironment *queryEnv,
					   DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;
	Oid			dropped_db = InvalidOid;
	List	   *drop_context;
	ErrorContextCallback callback;

	pool_before_utility(stmt);
	flow_locks_before_drop_extension(stmt);
	ddl_before_utility(stmt);
	if (IsA(stmt, DropdbStmt))
		dropped_db = get_database_oid(((DropdbStmt *) stmt)->dbname, true);
	/* a DROP refused for a sink's sake names the flow */
	drop_context = ddl_drop_context(stmt);
	if (drop_context != NIL)
	{
		callback.callback = ddl_drop_context_callback;
		callback.arg = drop_context;
		callback.previous = error_context_stack;
		error_context_stack = &callback;
	}
	if (prev_process_utility_hook)
		prev_process_utility_hook(pstmt, queryString, readOnlyTree, context,
								  params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
	if (drop_context != NIL)
		error_context_stack = callback.previous;
	/* what flows' owners may see of their sources changed: recompute them */
	visibility_after_utility(stmt);
	/* its files are gone: so are its flows' queues and state */
	if (OidIsValid(dropped_db) && preload_loaded())
	{
		stream_forget_database(dropped_db);
		pool_forget_database(dropped_db);
	}
}

void
_PG_init(void)
{
	/*
	 * Loaded by CREATE EXTENSION or a function call in a server that did not
	 * preload flowpg: the SQL objects work, flows are refused (see
	 * preload_require), and no server-level settings may be defined.
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;
	preload_mark_loaded();

	guc_define();
	MarkGUCPrefixReserved("flowpg");

	shmem_install_hooks();
	worker_register();
	/* every backend inherits them; see dirty_log_register_callbacks */
	dirty_log_register_callbacks();
	pool_register_callbacks();
	progress_register_callbacks();
	prev_process_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = flowpg_process_utility;
}
