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
#include "tcop/utility.h"
#include "utils/guc.h"

#include "ddl_events.h"
#include "flowpg.h"
#include "shmem.h"
#include "worker.h"

PG_MODULE_MAGIC;

bool		flowpg_enabled = true;
int			flowpg_max_flows = 64;
int			flowpg_max_flows_per_role = 0;
int			flowpg_state_memory_kb = 64 * 1024;
int			flowpg_queue_memory_kb = 16 * 1024;
int			flowpg_flush_interval_ms = 100;
int			flowpg_min_refresh_interval_ms = 5000;
int			flowpg_query_timeout_ms = 10 * 60 * 1000;
int			flowpg_slow_query_threshold_ms = 60 * 1000;
int			flowpg_workers_per_database = 3;

static bool loaded_at_startup = false;
static ProcessUtility_hook_type prev_process_utility_hook = NULL;

void		_PG_init(void);

/* What flowpg must see before some utility commands run. */
static void
flowpg_process_utility(PlannedStmt *pstmt, const char *queryString,
					   bool readOnlyTree, ProcessUtilityContext context,
					   ParamListInfo params, QueryEnvironment *queryEnv,
					   DestReceiver *dest, QueryCompletion *qc)
{
	worker_before_utility(pstmt->utilityStmt);
	ddl_before_utility(pstmt->utilityStmt);
	if (prev_process_utility_hook)
		prev_process_utility_hook(pstmt, queryString, readOnlyTree, context,
								  params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

void
_PG_init(void)
{
	/*
	 * Loaded by CREATE EXTENSION or a function call in a server that did not
	 * preload flowpg: the SQL objects work, flows are refused (see
	 * flowpg_require_preload), and no server-level settings may be defined.
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;
	loaded_at_startup = true;

	DefineCustomBoolVariable("flowpg.enabled",
							 "Runs flows; when off, changes are still captured but nothing is refreshed.",
							 NULL,
							 &flowpg_enabled,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.max_flows",
							"Maximum number of flows in the server.",
							NULL,
							&flowpg_max_flows,
							64, 1, 10000,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.max_flows_per_role",
							"Maximum number of flows one role may own in a database (0: flowpg.max_flows).",
							NULL,
							&flowpg_max_flows_per_role,
							0, 0, 10000,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.state_memory",
							"Shared memory for the state of streaming flows.",
							NULL,
							&flowpg_state_memory_kb,
							64 * 1024, 1024, INT_MAX / 2,
							PGC_POSTMASTER,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.queue_memory",
							"Shared memory for the input queues of streaming flows.",
							NULL,
							&flowpg_queue_memory_kb,
							16 * 1024, 256, INT_MAX / 2,
							PGC_POSTMASTER,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.flush_interval",
							"Period of the streaming sink writes.",
							NULL,
							&flowpg_flush_interval_ms,
							100, 1, 3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.min_refresh_interval",
							"Shortest period between two runs of a batching flow without eval_interval.",
							NULL,
							&flowpg_min_refresh_interval_ms,
							5000, 0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.query_timeout",
							"Statement timeout of one flow run.",
							"0 disables the timeout.",
							&flowpg_query_timeout_ms,
							10 * 60 * 1000, 0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.slow_query_threshold",
							"Flow runs longer than this are logged.",
							"-1 disables the log.",
							&flowpg_slow_query_threshold_ms,
							60 * 1000, -1, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flowpg.workers_per_database",
							"Most flowpg workers running the flows of one database at once.",
							"One of them is always left to streaming rounds while the others run batching refreshes.",
							&flowpg_workers_per_database,
							3, 1, 16,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("flowpg");

	shmem_install_hooks();
	worker_register();
	prev_process_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = flowpg_process_utility;
}

void
flowpg_require_preload(void)
{
	if (!loaded_at_startup)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flowpg is not loaded through shared_preload_libraries"),
				 errdetail("Flows need flowpg's shared memory and background workers, which exist only when the library is preloaded."),
				 errhint("Add flowpg to shared_preload_libraries in postgresql.conf and restart the server.")));
}
