/*
 * import_nccl — build a profile's collective entries from the text that
 * NVIDIA's nccl-tests print (all_reduce_perf, all_gather_perf,
 * reduce_scatter_perf, broadcast_perf), so a cluster measured with the tool
 * everyone already runs can feed the simulator without `ddpsim calibrate`.
 *
 * The format is nccl-tests' stdout as its src/common.cu (src/util.cu in
 * recent versions) prints it: '#' header lines (version, "Collective
 * test starting: NAME", "nThread ... nGpus ...", one "#  Rank N Group G Pid P
 * on HOST device D [BUS] NAME" line per rank), the column header
 *   "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time ..."
 * then one row per size (out-of-place columns, then in-place), then
 * "# Out of bounds values : N OK" and "# Avg bus bandwidth : X". Which
 * collective a file holds comes from the "Collective test starting" line, else
 * from a *_perf name in the file (a command line) or in its file name, and is
 * checked against what the columns say (redop, root, size/count ratio, the
 * busbw/algbw factor); ranks and nodes come from the Rank lines (distinct
 * hosts = nodes). Each file becomes one entry: backend "nccl", algorithm
 * "ring" (nccl-tests does not say which algorithm NCCL chose; the provenance
 * says so), scope "intra" on one node and "inter" on several, α–β fitted with
 * cal_fit_alpha_beta on the out-of-place times. Rows of 0 bytes (printed for
 * allgather and reduce-scatter below ranks × element size) move no data and
 * are skipped. What nccl-tests cannot measure (compute rates, memory and host
 * bandwidth) comes from a base profile, which is required.
 *
 * Every malformed input is an error naming FILE:LINE and what to do: wrong
 * column count, a non-numeric cell, a row with #wrong > 0, sizes not
 * ascending, a size that is not count x type size (x ranks for the gathering
 * collectives) as nccl-tests prints it, no data rows, a table without its
 * closing "# Out of bounds values" line (a run cut short), an unknown or
 * contradicted collective.
 */
#ifndef CALIBRATE_IMPORT_NCCL_H
#define CALIBRATE_IMPORT_NCCL_H

#include "core/profile.h"

#include <stddef.h>

/* One nccl-tests output, parsed. */
typedef struct cal_nccl_run {
  char path[4096];
  char binary[32]; /* all_reduce_perf, ... */
  char op[16];     /* the profile's name: allreduce | allgather | reducescatter | broadcast */
  char how[192];   /* how the collective was recognized, for notes */
  int ranks, nodes;
  char host[128];    /* the first rank's host */
  char device[128];  /* the first rank's device name, "" if not printed */
  char version[128]; /* "nccl-tests 2.17.6, NCCL 2.27.3", "" if not printed */
  int validated;     /* 0 when the run had validation off (#wrong = N/A) */
  int n;             /* sizes kept (non-zero bytes), ascending */
  double *bytes;     /* the size column, as nccl-tests counts it */
  double *time_us;   /* out-of-place time */
} cal_nccl_run;

int cal_nccl_parse(const char *path, cal_nccl_run *run);
void cal_nccl_run_free(cal_nccl_run *run);

typedef struct cal_nccl_opts {
  const char *base;        /* profile to take everything else from (required) */
  const char *name;        /* profile name; NULL: base's */
  double link_gbps;        /* nominal inter-node line rate; <= 0: unknown */
  const char *device_kind; /* "gpu" (default) | "cpu" */
} cal_nccl_opts;

/* Parse the files, fit each, and assemble a profile from the base: its
 * nccl entries of the same (op, algorithm, scope) are replaced, the others
 * kept. notes (may be NULL) receives lines for the user: how each file was
 * read and which base entries were kept. */
int cal_import_nccl(
    const char *const *paths, int n_paths, const cal_nccl_opts *o, core_profile **out, char *notes, size_t notes_len);

#endif
