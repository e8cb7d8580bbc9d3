/*-------------------------------------------------------------------------
 *
 * flowpg.h
 *	  A map of the source tree for a reader who starts here, and the
 *	  glossary of the structs named after a flow.  It declares nothing.
 *
 * Folders, each owning one part of the architecture:
 *	  frontend/   the SQL API (flow_api.c, flow_flush.c), GreptimeDB's
 *				  statements and dialect, TimescaleDB's names, starting
 *				  pending flows, pause, explain_flow, verify_flow
 *	  plan/		  a flow's query planned (planner.c), its time window,
 *				  pinned settings, EVAL INTERVAL ticks, time_bucket
 *	  catalog/	  flowpg's tables (flow, pending_flow, flow_run, errors),
 *				  the heavyweight locks, DDL events, restores, sink tables,
 *				  visibility, progress
 *	  batching/	  capture triggers, the dirty log, the refresh, backfill
 *	  streaming/  a writer's partials and their queue (stream_capture.c,
 *				  queue.c) and its compiled graphs (capture_graphs.c),
 *				  the flows' registry (registry.c), the
 *				  operator graph and aggregates, the worker's round over
 *				  the shared state (stream_round.c)
 *	  worker/	  the pool of workers, the workers, shared memory
 *	  common/	  what every part uses: the settings (guc.c), the preload
 *				  check (preload.c), guarded calls (subxact.c), the trust
 *				  rule (trust.c)
 * src/flowpg.c is the module's entry point (_PG_init, hooks).
 *
 * The structs named after a flow, and where each lives:
 *	  FlowEntry		  a flowpg.flow row as read (catalog.h)
 *	  FlowPlan		  a flow's planned query: outputs, aggregates, window (planner.h)
 *	  FlowDefinition  what create_flow is asked to make; FlowCreated what it made (flow_api.h)
 *	  FlowIdentity	  the owner and settings a flow's code runs under (settings.h)
 *	  FlowShared	  a streaming flow's bookkeeping in the state area (stream_flow.h)
 *	  StreamFlow	  a worker's handle on a streaming flow (stream_flow.h)
 *	  FlowGroup		  one group going through the operator graph (operator.h)
 *	  FlowSchedule	  a flow's schedule for the workers (catalog.h)
 *	  PendingFlow	  a flow waiting for its tables (pending.h)
 *	  FlowSlot		  a streaming flow's slot in the registry (registry.h)
 *	  FlowStatement	  a parsed GreptimeDB statement (greptime_parse.h)
 * and, private to their files: FlowPartial (a writer's partials,
 * stream_capture.c), CaptureFlow (capture.c), XactFlow (dirty_log.c),
 * DueFlow, BusyFlow, FlowRun (worker.c's batching runs).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_H
#define FLOWPG_H

#endif							/* FLOWPG_H */
