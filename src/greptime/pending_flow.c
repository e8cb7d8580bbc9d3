/*-------------------------------------------------------------------------
 *
 * pending_flow.c
 *	  Starting pending flows (flowpg.pending_flow, pending.c): a flowpg
 *	  worker runs a pending flow's CREATE FLOW statement again
 *	  (pending_flow_start, through greptime.c), as its owner under the
 *	  settings it was created under, after a table is created or a right
 *	  granted (noted by the event trigger flowpg_start_pending_flows, here),
 *	  and removes the row once the flow exists.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/event_trigger.h"
#include "miscadmin.h"
#include "utils/syscache.h"

#include "catalog.h"
#include "flow_locks.h"
#include "greptime.h"
#include "pending.h"
#include "pending_flow.h"
#include "pool.h"
#include "privileged.h"
#include "settings.h"
#include "subxact.h"

typedef struct StartAttempt
{
	PendingFlow *pending;
	bool		started;
} StartAttempt;

/* One pending flow's attempt to start, in a subtransaction. */
static void
start_pending(void *arg)
{
	StartAttempt *attempt = (StartAttempt *) arg;
	FlowIdentity identity;

	flow_limit_lock_waits();	/* until the subtransaction ends */
	flow_enter(&identity, attempt->pending->owner, attempt->pending->settings, false);
	attempt->started = greptime_run_statement(attempt->pending->statement, NULL,
												 attempt->pending->settings);
	flow_leave(&identity);
}

/* Remembers why a start failed; says it once per different reason. */
static void
start_failed(PendingFlow *pending, int sqlerrcode, const char *message)
{
	if (pending->last_error && strcmp(pending->last_error, message) == 0)
		return;
	ereport(LOG,
			(errcode(sqlerrcode),
			 errmsg("pending flow \"%s\" could not start: %s", pending->flow_name, message)));
	pending_set_error(pending->flow_name, message);
}

/*
 * In a flowpg worker, in a transaction of the start's own: one pending
 * flow's attempt to start, as its owner under its own settings.  A failure
 * stays in the views.  Returns whether it started; *retry when it could
 * not be tried now (its locks were busy, or a cancel came).
 */
static bool in_pending_start = false;

bool
pending_flow_start(const char *flow_name, bool *retry)
{
	StartAttempt attempt = {pending_get(flow_name), false};
	ErrorData  *edata;

	*retry = false;
	if (attempt.pending == NULL)
		return false;			/* dropped, or started by another worker */
	if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(attempt.pending->owner)))
	{
		start_failed(attempt.pending, ERRCODE_UNDEFINED_OBJECT,
					 "its owner role no longer exists");
		return false;
	}
	/* (the DDL of the start itself -- its sink -- asks for no other pass: see below) */
	in_pending_start = true;
	PG_TRY();
	{
		edata = subxact_run(start_pending, &attempt);
	}
	PG_FINALLY();
	{
		in_pending_start = false;
	}
	PG_END_TRY();
	if (edata == NULL)
	{
		if (attempt.started)
			ereport(LOG,
					(errmsg("pending flow \"%s\" started", attempt.pending->flow_name)));
		return attempt.started;
	}
	if (edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
		ReThrowError(edata);
	/* a table another transaction holds, or a preempting drop: later, not a failure */
	if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ||
		edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
	{
		QueryCancelPending = false;
		*retry = true;
		FreeErrorData(edata);
		return false;
	}
	start_failed(attempt.pending, edata->sqlerrcode, edata->message);
	return false;
}

/*
 * The event trigger of CREATE TABLE, ALTER TABLE (a rename), GRANT, ...:
 * pending flows may start now.  Only noted: a worker tries once this
 * transaction commits, so that no flow's code runs inside the statement of
 * a role that is not its owner, nor with that session's settings, nor
 * makes it wait.
 */
PG_FUNCTION_INFO_V1(flowpg_start_pending_flows);

Datum
flowpg_start_pending_flows(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "flowpg_start_pending_flows must be called as an event trigger");
	/* a start's own sink: the worker's pass goes on while any flow started */
	if (privileged_own_ddl || in_pending_start || !catalog_exists() || !pending_any())
		PG_RETURN_VOID();
	pool_check_pending_at_commit();
	PG_RETURN_VOID();
}
