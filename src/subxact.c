/*-------------------------------------------------------------------------
 *
 * subxact.c
 *	  Guarded calls: a function run in a subtransaction of its own.
 *
 * flowpg runs code whose errors must not become the caller's -- the flow's
 * own expressions in a writer, probes of a candidate window, re-planning a
 * restored flow as its owner -- the way PL/pgSQL runs an exception block:
 * in an internal subtransaction, rolled back on error, with the error
 * handed to the caller to decide.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "subxact.h"

ErrorData *
subxact_run(void (*fn) (void *arg), void *arg)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcontext);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
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
