/*-------------------------------------------------------------------------
 *
 * time_bucket.h
 *	  TimescaleDB's time_bucket as flowpg.time_bucket (time_bucket.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLOWPG_TIME_BUCKET_H
#define FLOWPG_TIME_BUCKET_H

#include "datatype/timestamp.h"

/* 2000-01-03 for widths in days and smaller units, 2000-01-01 for months. */
extern Timestamp time_bucket_default_origin(const Interval *width);

/* Refuses a width that is not positive, or mixes months with days or less. */
extern void time_bucket_check_width(const Interval *width);

/* The bucket of a local time (offset NULL: none). */
extern Timestamp time_bucket_local(Interval *width, Timestamp ts, Timestamp origin,
								   Interval *offset);

#endif							/* FLOWPG_TIME_BUCKET_H */
