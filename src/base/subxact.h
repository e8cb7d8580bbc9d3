/*-------------------------------------------------------------------------
 *
 * subxact.h
 *	  Guarded calls: a function run in a subtransaction of its own, whose
 *	  error is handed back (rolled back) instead of raised.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_SUBXACT_H
#define FLOWPG_SUBXACT_H

/*
 * Runs fn(arg) in an internal subtransaction: NULL when it returned, else
 * the error it raised (copied into the caller's memory context), after its
 * subtransaction was rolled back.  What fn allocated in longer-lived memory
 * stays; what it did in the database is undone on error.
 */
extern ErrorData *subxact_run(void (*fn) (void *arg), void *arg);

/*
 * The same, rolled back whether fn returned or not: nothing fn did in the
 * database stays (locks it took included).
 */
extern ErrorData *subxact_run_rolled_back(void (*fn) (void *arg), void *arg);

#endif							/* FLOWPG_SUBXACT_H */
