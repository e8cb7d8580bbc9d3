/*-------------------------------------------------------------------------
 *
 * flowpg.h
 *	  A map of the source tree for a reader who starts here, and the
 *	  glossary of the structs named after a flow.  It declares nothing.
 *
 * The folders of src/ are layers, listed bottom-up.  A folder calls only
 * into the folders below it; a lower layer reaches a higher one only
 * through a hook that the higher one registers in _PG_init (src/flowpg.c).
 * Each folder is on the include path, src/ itself is not: "catalog/..."
 * always reaches PostgreSQL's headers.
 *
 *	  base/		  what every layer uses: the settings (guc.c), the preload
 *				  check (preload.c), guarded calls (subxact.c), the trust
 *				  rule (trust.c), pinned settings and a flow's identity
 *				  (settings.c), the workers' pool in shared memory: claims,
 *				  wakes, status (pool.c, waits.c), what each backend does
 *				  for a flow now (progress.c).  Calls PostgreSQL only.
 *	  functions/  SQL functions a flow's query calls: time_bucket,
 *				  first_value_by / last_value_by, the hll and uddsketch
 *				  sketches, PromQL's prom_* aggregates.  Calls base.
 *	  metadata/	  flowpg's tables and their owners: the flow catalog
 *				  (catalog.c), pending flows (pending.c), run counters and
 *				  errors (stats.c), a flow's heavyweight locks
 *				  (flow_locks.c), statements run as the extension's owner
 *				  (privileged.c).  Calls base.
 *	  planning/	  a flow's query planned (planner.c, query_check.c), its
 *				  time window (window.c, window_precision.c), EVAL INTERVAL
 *				  ticks (eval_tick.c), retractions (retract_plan.c), and
 *				  the dialects: GreptimeDB's (dialect.c, dialect_types.c),
 *				  TimescaleDB's (timescale.c).  Calls metadata, functions,
 *				  base.
 *	  sinks/	  sink tables: created, checked, their columns and keys
 *				  matched, shared by several flows, and the statements
 *				  that write them.  Calls planning and below.
 *	  batching/	  the batching engine: the dirty log (dirty_log.c), the
 *				  window recompute (refresh.c), online backfills
 *				  (backfill.c), and the capture triggers of both engines
 *				  (capture.c).  Calls sinks and below; reaches streaming
 *				  through dirty_log_commit_hook and capture_streaming_hooks.
 *	  streaming/  the streaming engine: a writer's rows (stream_capture.c)
 *				  and their queues (queue.c), the flows' registry
 *				  (registry.c), the operator graph and aggregates, the
 *				  state in shared memory (group_store.c, state_memory.c),
 *				  the worker's round (stream_round.c).  Calls batching and
 *				  below; registers the hooks above.
 *	  lifecycle/  the life of a flow: create (flow_create.c), drop
 *				  (flow_drop.c), names (flow_names.c), flush and refresh
 *				  (flow_flush.c), pause, verify, explain, DDL events and
 *				  guards, dependency views (flow_deps.c), restores,
 *				  visibility changes, the views' live figures; flow_api.c
 *				  is the SQL functions' glue.  Calls streaming and below.
 *	  greptime/	  GreptimeDB's statements: parsed (greptime_parse.c, tql.c),
 *				  run (greptime.c: flowpg.execute), and pending flows
 *				  started when their tables appear (pending_flow.c).
 *				  Calls lifecycle and below.
 *	  worker/	  the launcher and the workers' loop (worker.c).  Calls
 *				  everything below.
 * src/flowpg.c, the module's entry point (_PG_init: settings, shared
 * memory, the hooks, the ProcessUtility hook), calls everything.
 *
 * The structs named after a flow, and where each lives:
 *	  FlowEntry		  a flowpg.flow row as read (catalog.h)
 *	  FlowPlan		  a flow's planned query: outputs, aggregates, window (planner.h)
 *	  FlowDefinition  what create_flow is asked to make; FlowCreated what it made (flow_create.h)
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
 * "Batch" means one thing: a streaming batch, the rows of one transaction
 * queued for a flow (batch_codec.c, queue.c).  The batching engine's work
 * is a refresh (refresh.c) or a backfill piece; its unit is a window range.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_H
#define FLOWPG_H

#endif							/* FLOWPG_H */
