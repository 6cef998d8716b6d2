/*
 * scenario — a what-if study read from a libconfig file: which profile and
 * model(s), the training setup, the cluster, the networks to compare, the DDP
 * settings, and how to simulate. A scalar array [a, b, c] in place of a value
 * is a sweep dimension and a list of groups ( {...}, {...} ) a set of named
 * alternatives; the study is their Cartesian product, one point (and one CSV
 * row) each. Every key is checked: unknown keys, wrong types, out-of-range
 * values, missing files and impossible combinations are rejected with
 * file:line before anything runs. The format is documented in
 * scenarios/README.md.
 */
#ifndef SIM_SCENARIO_H
#define SIM_SCENARIO_H

#include "sim/collective.h"

#include "core/cfg.h"
#include "core/model.h"
#include "core/profile.h"

#include <stdint.h>

enum sim_precision {
  SIM_PREC_FP32 = 0, SIM_PREC_TF32, SIM_PREC_FP16, SIM_PREC_BF16, SIM_PREC_AMP_FP16,
  SIM_PREC_AMP_BF16, SIM_N_PRECS
};
const char *sim_precision_name(enum sim_precision p);
/* Compute precision used for the GEMMs, and bytes per gradient element. */
enum core_prec sim_precision_compute(enum sim_precision p);
int sim_precision_grad_bytes(enum sim_precision p);

enum sim_optimizer { SIM_OPT_SGD = 0, SIM_OPT_SGD_MOMENTUM, SIM_OPT_ADAM };
const char *sim_optimizer_name(enum sim_optimizer o);

/* DDP communication hooks (reference/cost-models.md, PyTorch's
 * default_hooks.py and powerSGD_hook.py). */
enum sim_compress { SIM_COMPRESS_NONE = 0, SIM_COMPRESS_FP16, SIM_COMPRESS_BF16, SIM_COMPRESS_POWERSGD };
typedef struct sim_compression {
  enum sim_compress kind;
  int rank;                /* PowerSGD matrix approximation rank */
} sim_compression;
/* "none", "fp16", "bf16", "powersgd:R"; 0 or CORE_EINVAL. */
int sim_compression_parse(const char *s, sim_compression *out);
/* The same text back, into buf. */
const char *sim_compression_name(const sim_compression *c, char *buf, int n);

typedef struct sim_network {
  char name[64];
  int from_profile;        /* use the profile's measured inter-node link (gbps > 0: rescaled to it) */
  double gbps;             /* line rate per NIC */
  double latency_us;       /* per message, software stack included */
  int nics_per_node;
  double efficiency;       /* achievable fraction of the line rate */
  double oversubscription; /* fabric: >= 1 */
  int line;                /* where it was defined, for errors */
} sim_network;

/* Sweep dimensions, outermost first; a point is one index per dimension.
 * A dimension of one value leaves every point's index as it was.
 * The job-level ones (checkpoint mode, spares, interval) are innermost, so
 * the points of one step-level configuration are consecutive. */
enum sim_dim {
  SIM_DIM_MODEL = 0, SIM_DIM_NETWORK, SIM_DIM_FABRIC, SIM_DIM_BACKEND, SIM_DIM_ALGORITHM, SIM_DIM_PRECISION,
  SIM_DIM_BATCH, SIM_DIM_BUCKET_CAP, SIM_DIM_OVERLAP, SIM_DIM_FIND_UNUSED, SIM_DIM_COMPRESSION, SIM_DIM_PER_NODE,
  SIM_DIM_NODES,
  SIM_DIM_CKPT_MODE, SIM_DIM_SPARES, SIM_DIM_CKPT_EVERY, SIM_N_DIMS
};
#define SIM_N_STEP_DIMS SIM_DIM_CKPT_MODE

/* The run as a whole: failures and checkpoints (scenario groups job,
 * failures, checkpoint). */
typedef struct sim_job_cfg {
  int present;             /* a checkpoint or failures group is given */
  double steps, hours;     /* length of the run: steps, or failure-free hours */
  int fail_dist;           /* enum sim_fail_dist */
  double *at_steps;        /* scheduled failures */
  int n_at_steps;
  double mtbf_h;           /* exponential, per node or per GPU */
  double weibull_scale_h, weibull_shape;
  int per_gpu;
  double detect_s;         /* < 0: the backend's collective timeout */
  double mttr_h;
  double restart_s;        /* < 0: from the profile */
  long long *spares;
  double *every;           /* checkpoint interval values */
  int every_in_steps;      /* every_steps instead of every_s */
  int *async;
  int sharded;
  double storage_GBps;     /* aggregate cap of the checkpoint storage; 0 = none */
  double snapshot_GBps;    /* async snapshot to host memory; 0 = the profile's */
  int replications;
  double max_events;       /* simulation.max_events: events one point's Monte Carlo may take */
  /* For errors about the work: the key setting the failure rate (mtbf_h,
   * weibull_scale_h, at_steps; else the failures group) and
   * simulation.max_events (NULL when not given). Borrowed from cfg. */
  const config_setting_t *rate_key, *max_events_key;
} sim_job_cfg;

typedef struct sim_scenario {
  core_cfg cfg;             /* kept open: names are borrowed from it */
  char path[4096];
  char name[128];
  char description[512];
  char profile_path[4096];
  char profile_override[4096];  /* used instead of the file's profile when set */
  core_profile *profile;
  int n_models;
  core_model **models;
  int n_networks;
  sim_network *networks;
  int n_fabrics;            /* 0: no fabric group (sim/fabric.h) */
  struct sim_fabric *fabrics;
  int n[SIM_N_DIMS];        /* values per dimension */
  enum sim_backend *backends;
  int *algorithms;          /* enum sim_algo, or -1 for "auto" */
  enum sim_precision *precisions;
  long long *batch;
  double *bucket_cap_mb;
  int *overlap;
  int *find_unused;         /* ddp.find_unused_parameters */
  long long *per_node;
  long long *nodes;
  sim_compression *compression;
  double powersgd_min_rate;    /* PyTorch's min_compression_rate, default 2 */
  double first_bucket_mb;
  int gradient_as_bucket_view;
  double timeout_s;         /* 0: the backend's default */
  enum sim_optimizer optimizer;
  int steps;                /* simulated steps per point */
  uint64_t seed;
  int every_rank;
  char csv_name[256];
  sim_job_cfg job;
} sim_scenario;

typedef struct sim_point {
  long index;
  const core_model *model;
  const sim_network *network;
  const struct sim_fabric *fabric;  /* NULL without a fabric group */
  /* Set only inside the fabric's contention loop (sim/fabric.h): the
   * slowdowns to use, one representative rank. */
  const struct sim_fabric_given *fabric_given;
  enum sim_backend backend;
  int algorithm;            /* -1 = auto */
  enum sim_precision precision;
  int batch;
  double bucket_cap_mb;
  int overlap;
  int find_unused;          /* find_unused_parameters=True: capped buckets, never rebuilt */
  sim_compression compression;
  int per_node, nodes;
  int ckpt_async;           /* job level (when the scenario has one) */
  long long spares;
  double ckpt_every;        /* seconds, or steps if job.every_in_steps */
  long step_index;          /* the point's index among step-level configurations */
} sim_point;

int sim_scenario_load(const char *path, sim_scenario **out);
/* The same with another profile instead of the scenario's own (the file's
 * profile key is still required; paths in it resolve as usual). */
int sim_scenario_load_with(const char *path, const char *profile, sim_scenario **out);
/* Parse text as if it were the file `name` (tests, fuzzing). Relative paths
 * resolve against name's directory. */
int sim_scenario_load_string(const char *text, const char *name, sim_scenario **out);
void sim_scenario_free(sim_scenario *s);

long sim_scenario_points(const sim_scenario *s);
void sim_scenario_point(const sim_scenario *s, long index, sim_point *p);

/* Seconds after which the backend aborts a collective (scenario or default). */
double sim_scenario_timeout(const sim_scenario *s, enum sim_backend b);

/* Defaults, with their sources. */
#define SIM_NCCL_TIMEOUT_S 600.0 /* torch/distributed/constants.py: default_pg_nccl_timeout, 10 min */
#define SIM_GLOO_TIMEOUT_S 30.0  /* gloo/rendezvous/store.h kDefaultTimeout and Gloo's context default, 30 s */
/* simulation.max_events by default: under a minute of one core per point
 * at the job level's slowest rate (bench/bench_sim prints it), a hundred
 * times the events of a point of scenarios/node-failure.cfg. */
#define SIM_DEFAULT_MAX_EVENTS 2e8

#endif
