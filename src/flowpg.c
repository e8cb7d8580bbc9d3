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
 * _PG_init is where the layers are tied together: it reserves every part's
 * shared memory, and installs the hooks through which a lower layer reaches
 * a higher one (the streaming engine's hooks in the dirty log and in the
 * capture triggers; see src/base/flowpg.h).
 *
 * Shared memory is reserved and initialized here, in one place.
 * What lives in shared memory, who owns it, and its locks:
 *
 * - the worker pool (pool.c): per database, its workers and the flow
 *   each has claimed.  One spinlock, held for the lookup of a database's
 *   slot and a few assignments (see pool.c).
 * - the flow registry (registry.c): a slot per streaming flow, each with
 *   its own spinlock; the registry LWLock guards taking and freeing slots
 *   (a lookup takes it shared).
 * - the input queues (queue.c): batches in the queue DSA area, created in
 *   place, fixed in size (flowpg.queue_memory); each chain's head is in its
 *   flow's registry slot.
 * - the state area (state_memory.c): a DSA area holding each streaming
 *   flow's groups, unlocked (a flow's part is touched only by the worker
 *   that claimed it); its LWLock guards creating it.
 * - what each backend does for a flow now (progress.c): a slot per
 *   backend, with its own spinlock.
 * - why due batching flows wait for a worker (waits.c): a fixed array of
 *   the server's, one spinlock.
 *
 * No LWLock or spinlock is held across SPI, a user's function or a wait.
 * A server crash reinitializes all of it; flows then refill from the
 * source.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "commands/dbcommands.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
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
#include "state_memory.h"
#include "dirty_log.h"
#include "queue.h"
#include "registry.h"
#include "stream_capture.h"
#include "stream_state.h"
#include "waits.h"
#include "worker.h"

PG_MODULE_MAGIC;

static ProcessUtility_hook_type prev_process_utility_hook = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

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

static void
flowpg_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	state_memory_shmem_request();
	pool_shmem_request();
	registry_shmem_request();
	queue_shmem_request();
	progress_shmem_request();
	waits_shmem_request();
}

static void
flowpg_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	state_memory_shmem_startup();
	pool_shmem_startup();
	registry_shmem_startup();
	queue_shmem_startup();
	progress_shmem_startup();
	waits_shmem_startup();
	LWLockRelease(AddinShmemInitLock);
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

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = flowpg_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = flowpg_shmem_startup;
	registry_install_hooks();
	stream_capture_install_hooks();
	worker_register();
	/* every backend inherits them; see dirty_log_register_callbacks */
	dirty_log_register_callbacks();
	pool_register_callbacks();
	progress_register_callbacks();
	prev_process_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = flowpg_process_utility;
}
