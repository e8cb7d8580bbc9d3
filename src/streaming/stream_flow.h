/*-------------------------------------------------------------------------
 *
 * stream_flow.h
 *	  What the worker-side files of streaming share about one flow: its
 *	  part in the state area (FlowShared, kept across workers) and a
 *	  worker's handle on it (StreamFlow, compiled graph and this round).
 *
 *	  stream_state.c   the shared part and store, the worker's handles
 *	  stream_round.c   one flow's round: transactions, errors, publishing
 *	  stream_apply.c   applying queued batches to the state
 *	  stream_refill.c  refilling windows of the state from the source
 *	  stream_write.c   writing the sink from the changed groups
 *	  stream_evict.c   giving up windows: memory, age and expire_after
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_STREAM_FLOW_H
#define FLOWPG_STREAM_FLOW_H

#include "refresh.h"
#include "batch_codec.h"
#include "group_store.h"
#include "operator.h"
#include "queue.h"
#include "registry.h"
#include "sink.h"

/*
 * Windows below the cold floor that the state holds again: late rows came
 * to them (stream_evict.c).  Time ordinals [start, end), and the window
 * values of those bounds, [wstart, wend).
 */
#define WARM_RANGES 16
typedef struct WarmRange
{
	int64		start;
	int64		end;
	int64		wstart;
	int64		wend;
	TimestampTz touched;		/* a change applied to it last */
} WarmRange;

/*
 * A flow's streaming bookkeeping, in the state area next to its groups.
 * Only the worker that has claimed the flow reads or writes it.
 */
typedef struct FlowShared
{
	uint32		magic;
	uint32		version;		/* graph version of the state */
	dsa_pointer store;			/* its groups; invalid until loaded, or given up */
	bool		loaded;
	bool		degraded;		/* state given up for memory: recomputed instead */
	TimestampTz degraded_at;	/* when state (all, or windows) was last given up */
	int			degrades;		/* in a row: the wait before loading again grows */

	/*
	 * Windows below these are not in the state: below the expiry, changes
	 * are ignored; below the others, they are recomputed from the source.
	 */
	bool		has_watermark;	/* given up for memory */
	int64		watermark_time;
	int64		watermark_window;
	bool		has_expiry;		/* expire_after */
	int64		expiry_time;
	int64		expiry_window;
	bool		has_cold;		/* older than flowpg.state_keep */
	int64		cold_time;
	int64		cold_window;
	bool		evict_requested;
	bool		has_newest;		/* the newest time the state has seen */
	int64		newest_time;
	int			nwarm;
	WarmRange	warm[WARM_RANGES];

	/*
	 * What the round in progress may have changed (time ordinals, or the
	 * whole flow).  Set before each change, cleared once the round's
	 * transaction committed: found set by the next round, it means that
	 * round did not finish, and those windows are recomputed from the
	 * source and refilled instead of trusted.
	 */
	bool		touched;
	bool		touched_whole;
	int64		touched_lo;
	int64		touched_hi;

	/*
	 * A round wrote the sink and may have committed without recording
	 * which groups the sink now holds: the next write upserts and deletes
	 * without trusting the groups' in-sink marks.
	 */
	bool		write_pending;

	bool		fallback_logged;	/* changes the worker itself logged dirty */
	int64		flush_after_recompute;	/* a flush its next dirty pass completes */
	TimestampTz oldest_unflushed;
	TimestampTz last_flush;
	TimestampTz last_apply;		/* the last round that applied batches */
	int64		last_write_us;	/* how long the last sink write took */
	int64		last_write_groups;	/* and how many groups it wrote */
	TimestampTz next_dirty_check;
	TimestampTz retry_at;		/* after a failure */
	TimestampTz busy_until;		/* after a lock a user's transaction held */
	int			failures;

	/* flow_stats */
	int64		refills;		/* the whole state loaded from the source */
	int64		degrades_total; /* whole state given up for memory */
	int64		evictions;		/* older windows given up for memory */
	int64		repairs;		/* rounds that did not finish, recomputed */
	StreamStats stats;
	RunResult unrecorded;		/* rounds not in flowpg.flow_run yet */
	int64		unrecorded_runs;
	TimestampTz unrecorded_since;
	TimestampTz last_round_at;	/* the last round that did work: its end */
	int64		last_round_us;	/* and its own duration */
} FlowShared;

/* Windows (as window-value ordinals) a refill already read from the source. */
typedef struct SkipRange
{
	bool		all;
	bool		has_lo;
	int64		lo;
	bool		has_hi;
	int64		hi;
} SkipRange;

typedef struct PendingBatch
{
	QueuedBatch *batch;
	List	   *skips;			/* SkipRange */
	bool		done;			/* applied or dropped: removed at commit */
	bool		applied;		/* merged into the state this round */
} PendingBatch;

/* Time ranges a round's fallbacks are kept in, at most. */
#define FALLBACK_RANGES 16

/* A worker's handle on a flow. */
typedef struct StreamFlow
{
	int64		flow_id;
	uint32		version;		/* of the compiled graph */
	MemoryContext memory;		/* everything of the handle */
	MemoryContext round_memory; /* this round's batches and skips */
	MemoryContext batch_memory; /* one group of one batch */
	MemoryContext flush_memory; /* sink rows being written */
	AggContext *batch_cxt;		/* partials of one group, in batch_memory */
	AggTrans   *trans;			/* scratch: a group's states */
	AggTrans   *partials;		/* scratch: a batch group's partials */
	AggInput   *inputs;			/* scratch: a batch row's aggregate inputs */
	FlowEntry  *entry;
	bool		paused;			/* the catalog's, at the last sync */
	RunResult counts_before;	/* the shared counts when this round began */
	StreamGraph *graph;
	WindowProbe *probe;
	bool		may_go_cold;	/* no NULL window in the state: state_keep applies */
	FlowShared *sh;				/* NULL when the registry had no slot */
	TimestampTz no_shared_until;	/* sh could not be made: not before */
	GroupStore *store;			/* a handle on sh->store, NULL when none */
	dsa_pointer store_dp;		/* the store it is a handle on */
	List	   *pending;		/* PendingBatch of this round, oldest first */
	SinkRows   *append_rows;	/* flows without aggregates: rows to append */
	bool		writing;		/* this round writes the sink */
	int64		write_period;	/* shortest period of its sink writes, us (0: not known yet) */
	bool		backfilling;	/* in flowpg.flow_backfill: until its loaded state is written */
	bool		backfill_ended; /* this round ended it (once it commits) */
	bool		backfill_checked;	/* backfilling is known for this graph */
	bool		ran;			/* this transaction's round got its locks and ran */
	List	   *written;		/* groups written this round (in_sink marks to set) */
	List	   *written_keep;	/* and what the sink does with each (WRITTEN_*) */

	bool		has_stale;		/* the batches left groups STORED_STALE */

	/*
	 * Writers' changes may wait in the dirty log past this round's write
	 * (the worker is behind): a row taken back may be one the state never
	 * had, so retractions mark their groups for a recompute instead.
	 */
	bool		regroup_retractions;

	/*
	 * What this round could not apply: logged dirty, as a few time ranges
	 * (late rows to windows apart are recomputed apart, not with all that
	 * lies between them), or the whole flow.
	 */
	bool		fallback_whole;
	int			nfallbacks;
	int64		fallback_lo[FALLBACK_RANGES];
	int64		fallback_hi[FALLBACK_RANGES];
} StreamFlow;

/* What a round's sink write did with a group (StreamFlow.written_keep). */
#define WRITTEN_DELETED	0		/* HAVING dropped it: not in the sink */
#define WRITTEN_KEPT	1		/* in the sink */
#define WRITTEN_GONE	2		/* its last row was taken back: leaves the state too */

/* stream_state.c: the flow's shared part and store, this worker's handles */
extern List *stream_state_handles(void);
extern FlowShared *stream_state_shared(int64 flow_id, bool create);
extern void stream_state_open(StreamFlow *flow);
extern void stream_state_reset(StreamFlow *flow);
extern void stream_state_open_store(StreamFlow *flow);
extern void stream_state_drop_store(StreamFlow *flow);
extern void stream_state_touch(StreamFlow *flow, bool whole, int64 lo, int64 hi);
extern StoredGroup *stream_state_mark_stale(StreamFlow *flow, int64 time_lo, int64 time_hi);
extern bool stream_state_floor(StreamFlow *flow, int64 *time, int64 *window);
extern int64 stream_state_window_of(StreamFlow *flow, int64 time);
extern bool stream_state_in_skips(List *skips, bool window_null, int64 w);
extern List *stream_state_skips_for(StreamFlow *flow, List *ranges, bool whole);
extern StoredGroup *stream_state_merge_group(StreamFlow *flow, int64 time_lo, int64 time_hi,
											 AggTrans *partials, AggInput *inputs, int sign,
											 bool refilled);

/* stream_apply.c: the round's first stage (take) and its apply stage */
extern void stream_apply_take(StreamFlow *flow);
extern void stream_apply_pending(StreamFlow *flow);

/* stream_refill.c: the state's first load, and the recompute stage */
extern void stream_refill_load(StreamFlow *flow);
extern void stream_refill_dirty(StreamFlow *flow, bool until_done);

/*
 * The apply stage's groups that could not take a retraction (STORED_STALE)
 * recomputed from their rows under the round's snapshot, marked
 * STORED_REGROUP; false, changing nothing, when that would not be cheaper
 * than recomputing their windows.
 */
extern bool stream_refill_groups(StreamFlow *flow);

/* stream_write.c: the round's sink stage (connects to SPI itself) */
extern bool stream_has_changes(StreamFlow *flow);
extern void stream_write_sink(StreamFlow *flow);

/* stream_publish.c: the round's last stage */
extern void stream_publish(StreamFlow *flow, int64 flush_done, bool failed, TimestampTz committed);
extern void stream_record_rounds(StreamFlow *flow, TimestampTz now, bool force);

/* stream_evict.c */
extern void stream_evict_for_memory(StreamFlow *flow);
extern void stream_evict_aged(StreamFlow *flow);
extern void stream_evict_warm_up(StreamFlow *flow, List *ranges);
extern bool stream_evict_is_warm(FlowShared *sh, bool by_window, int64 x, bool touch);
extern bool stream_evict_cold_floor(StreamFlow *flow, int64 newest, int64 *floor_time);

#endif							/* FLOWPG_STREAM_FLOW_H */
