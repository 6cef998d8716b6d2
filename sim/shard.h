/*
 * shard — a study split over processes (a Slurm job array, or any batch
 * scheduler) and put back together. Shard I of N runs the step-level
 * configurations c with c % N == I, each with all of its job-level points
 * (checkpoint mode, spares, interval), so that a point's Monte Carlo and the
 * best interval among its siblings are computed where an unsharded run
 * computes them. Every point draws from its own stream (seed and index), so
 * a shard's rows are the unsharded run's rows; each shard begins with a stamp
 * of its seed and inputs, and shard 0 then writes the header.
 * sim_shard_merge puts the shards' rows back in point order: the bytes of
 * the unsharded run's CSV.
 */
#ifndef SIM_SHARD_H
#define SIM_SHARD_H

#include "sim/scenario.h"

#include <stddef.h>

/* Points of one step-level configuration (the job-level points under it). */
long sim_shard_job_points(const sim_scenario *s);
/* Does shard i of n run point `index`? */
int sim_shard_owns(const sim_scenario *s, int shard, int n_shards, long index);
/* The shard of n_shards that holds point index. */
int sim_shard_of(const sim_scenario *s, int n_shards, long index);

/* DIR/NAME.shard-I-of-N.csv, NAME the scenario's CSV name without .csv. */
void sim_shard_csv_path(const sim_scenario *s, const char *dir, int shard, int n_shards, char *buf, size_t n);

/* A shard's first line, its stamp: "# ddpsim shard I/N: seed S, profile P,
 * scenario and models M", P the CRC-64 (ECMA-182, ISA-L) of the profile's
 * bytes and M that of the scenario file's and its model files' bytes. Rows
 * of another seed, profile or version of the study are as many, for the
 * same points, but not the same values: the stamp tells them apart. No
 * newline; into buf of n bytes. */
int sim_shard_stamp(const sim_scenario *s, int shard, int n_shards, char *buf, size_t n);

/* Merge the n_shards shard CSVs of s in dir into out: each must be there,
 * stamped as shard k of n_shards with the seed of shard 0 and the profile
 * and files s was loaded from, complete (the rows its configurations call
 * for; shard 0 with the header, the others without), each row beginning
 * with its point's model, nodes, devices per node, GPUs and network. The
 * stamps are left out of out. Nothing is written when one is missing,
 * short, of another seed, profile or version of the scenario. */
int sim_shard_merge(const sim_scenario *s, const char *dir, int n_shards, const char *out);

#endif
