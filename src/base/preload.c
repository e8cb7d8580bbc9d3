/*-------------------------------------------------------------------------
 *
 * preload.c
 *	  Whether flowpg was loaded through shared_preload_libraries.  Loaded
 *	  later (by CREATE EXTENSION, or a call of one of its functions in a
 *	  server that did not preload it), its SQL objects work but flows are
 *	  refused: they need its shared memory and background workers.  Every
 *	  backend inherits the postmaster's answer.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "preload.h"

static bool loaded_at_startup = false;

void
preload_mark_loaded(void)
{
	loaded_at_startup = true;
}

bool
preload_loaded(void)
{
	return loaded_at_startup;
}

void
preload_require(void)
{
	if (!loaded_at_startup)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flowpg is not loaded through shared_preload_libraries"),
				 errdetail("Flows need flowpg's shared memory and background workers, which exist only when the library is preloaded."),
				 errhint("Add flowpg to shared_preload_libraries in postgresql.conf and restart the server.")));
}
