/*-------------------------------------------------------------------------
 *
 * subxact.c
 *	  Guarded calls: a function run in a subtransaction of its own.
 *
 * flowpg runs code whose errors must not become the caller's -- the flow's
 * own expressions in a writer, probes of a candidate window, re-planning a
 * restored flow as its owner -- the way PL/pgSQL runs an exception block:
 * in an internal subtransaction, rolled back on error, with the error
 * handed to the caller to decide.  Code that must leave nothing behind
 * (explain_flow's EXPLAINs) runs in one rolled back in any case.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "subxact.h"

/* Runs fn(arg) in a subtransaction, kept when keep and fn returned. */
static ErrorData *
run_guarded(void (*fn) (void *arg), void *arg, bool keep)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcontext);
	PG_TRY();
	{
		fn(arg);
		if (keep)
			ReleaseCurrentSubTransaction();
		else
			RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
	}
	PG_END_TRY();
	return edata;
}

ErrorData *
subxact_run(void (*fn) (void *arg), void *arg)
{
	return run_guarded(fn, arg, true);
}

ErrorData *
subxact_run_rolled_back(void (*fn) (void *arg), void *arg)
{
	return run_guarded(fn, arg, false);
}
