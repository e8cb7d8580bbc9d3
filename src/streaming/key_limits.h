/*-------------------------------------------------------------------------
 *
 * key_limits.h
 *	  Whether a row's group key fits where a streaming flow keeps it
 *	  (see key_limits.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_KEY_LIMITS_H
#define FLOWPG_KEY_LIMITS_H

#include "operator.h"

/*
 * The key in graph->key_slot: an ERROR (54000, naming the flow, with
 * graph->key_too_large set) when the state or the sink's index could not
 * hold it.
 */
extern void key_limits_check(StreamGraph *graph);

#endif							/* FLOWPG_KEY_LIMITS_H */
