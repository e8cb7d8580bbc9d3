/*-------------------------------------------------------------------------
 *
 * pending_flow.c
 *	  Owner of flowpg.pending_flow: flows created with
 *	  defer_on_missing_source over tables that do not exist yet.
 *
 * A pending flow is its CREATE FLOW statement, its owner and the settings
 * it was created under; a flowpg worker runs the statement again
 * (pending_flow_start, here, through greptime.c), as the owner under those
 * settings, after a table is created or a right granted (noted by the event
 * trigger flowpg_start_pending_flows, here), and removes the row once the
 * flow exists.  Only these functions touch the table, as
 * the extension owner, so users need no rights on it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

#include "batch.h"
#include "catalog.h"
#include "flow_api.h"
#include "flow_locks.h"
#include "greptime.h"
#include "privileged.h"
#include "pending_flow.h"
#include "pool.h"
#include "subxact.h"

bool
pending_flow_any(void)
{
	bool		any;

	privileged_query("SELECT 1 FROM flowpg.pending_flow LIMIT 1", 0, NULL, NULL, NULL);
	any = SPI_processed > 0;
	privileged_query_end();
	return any;
}

bool
pending_flow_exists(const char *flow_name)
{
	return pending_flow_get(flow_name) != NULL;
}

static List *
read_pending(const char *where, const char *flow_name)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {flow_name ? CStringGetTextDatum(flow_name) : (Datum) 0};
	List	   *flows = NIL;

	privileged_query(psprintf("SELECT flow_name, owner::oid, statement, settings, "
									  "sink_table, comment, last_error "
									  "FROM flowpg.pending_flow %s ORDER BY flow_name", where),
							 flow_name ? 1 : 0, types, values, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(caller);
		PendingFlow *flow = palloc(sizeof(PendingFlow));
		bool		isnull;

		flow->flow_name = SPI_getvalue(tuple, desc, 1);
		flow->owner = DatumGetObjectId(SPI_getbinval(tuple, desc, 2, &isnull));
		flow->statement = SPI_getvalue(tuple, desc, 3);
		flow->settings = DatumGetArrayTypePCopy(SPI_getbinval(tuple, desc, 4, &isnull));
		flow->sink_name = SPI_getvalue(tuple, desc, 5);
		flow->comment = SPI_getvalue(tuple, desc, 6);
		flow->last_error = SPI_getvalue(tuple, desc, 7);
		flows = lappend(flows, flow);
		MemoryContextSwitchTo(old);
	}
	privileged_query_end();
	return flows;
}

PendingFlow *
pending_flow_get(const char *flow_name)
{
	List	   *flows = read_pending("WHERE flow_name = $1", flow_name);

	return flows ? linitial(flows) : NULL;
}

List *
pending_flow_get_all(void)
{
	return read_pending("", NULL);
}

void
pending_flow_add(const PendingFlow *flow, const char *missing)
{
	Oid			types[9] = {TEXTOID, OIDOID, TEXTOID, TEXTARRAYOID, TEXTOID, TEXTOID, TEXTOID,
	TEXTOID, INTERVALOID};
	Datum		values[9] = {CStringGetTextDatum(flow->flow_name),
		ObjectIdGetDatum(flow->owner), CStringGetTextDatum(flow->statement),
		PointerGetDatum(flow->settings), CStringGetTextDatum(missing),
		CStringGetTextDatum(flow->sink_name),
		flow->comment ? CStringGetTextDatum(flow->comment) : (Datum) 0,
		flow->options ? CStringGetTextDatum(flow->options) : (Datum) 0,
	flow->expire_after ? IntervalPGetDatum(flow->expire_after) : (Datum) 0};
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', flow->comment ? ' ' : 'n',
	flow->options ? ' ' : 'n', flow->expire_after ? ' ' : 'n'};

	privileged_execute("INSERT INTO flowpg.pending_flow "
							   "(flow_name, owner, statement, settings, missing, sink_table, comment, "
							   "options, expire_after) "
							   "VALUES ($1, $2::regrole, $3, $4, $5, $6, $7, $8::jsonb, $9) "
							   "ON CONFLICT (flow_name) DO UPDATE SET owner = excluded.owner, "
							   "statement = excluded.statement, settings = excluded.settings, "
							   "missing = excluded.missing, sink_table = excluded.sink_table, "
							   "comment = excluded.comment, options = excluded.options, "
							   "expire_after = excluded.expire_after, last_error = NULL, updated_at = now()",
							   9, types, values, nulls);
}

void
pending_flow_remove(const char *flow_name)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(flow_name)};

	privileged_execute("DELETE FROM flowpg.pending_flow WHERE flow_name = $1",
							   1, types, values, NULL);
}

/* Why the last attempt to start it failed, for the views. */
void
pending_flow_set_error(const char *flow_name, const char *message)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2] = {CStringGetTextDatum(flow_name), CStringGetTextDatum(message)};

	privileged_execute("UPDATE flowpg.pending_flow SET last_error = $2, updated_at = now() "
							   "WHERE flow_name = $1", 2, types, values, NULL);
}

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
	pending_flow_set_error(pending->flow_name, message);
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
	StartAttempt attempt = {pending_flow_get(flow_name), false};
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
	if (privileged_own_ddl || in_pending_start || !catalog_exists() || !pending_flow_any())
		PG_RETURN_VOID();
	pool_check_pending_at_commit();
	PG_RETURN_VOID();
}
