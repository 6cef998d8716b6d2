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
#include "sim/cost.h"
#include "sim/jobcfg.h"
#include "sim/network.h"
#include "sim/objective.h"

#include "core/cfg.h"
#include "core/model.h"
#include "core/profile.h"
#include "core/vocab.h"

#include <stdint.h>

enum sim_precision {
  SIM_PREC_FP32 = 0,
  SIM_PREC_TF32,
  SIM_PREC_FP16,
  SIM_PREC_BF16,
  SIM_PREC_AMP_FP16,
  SIM_PREC_AMP_BF16,
  SIM_N_PRECS
};
const char *sim_precision_name(enum sim_precision p);
/* Compute precision used for the GEMMs, and bytes per gradient element. */
enum core_prec sim_precision_compute(enum sim_precision p);
int sim_precision_grad_bytes(enum sim_precision p);

enum sim_optimizer { SIM_OPT_SGD = 0, SIM_OPT_SGD_MOMENTUM, SIM_OPT_ADAM };

/* ddp.first_bucket_mb = "cap": the first bucket takes each point's cap, as
 * PyTorch's does in a job that passes bucket_cap_mb. */
#define SIM_FIRST_BUCKET_CAP (-1.0)

/* Which kernel runs the attention layers (training.attention): "auto" is
 * PyTorch's scaled_dot_product_attention's own choice (sim/memfit.h);
 * "fused" a kernel that keeps no score matrices (flash, memory-efficient,
 * cuDNN); "math" the unfused composite one, which keeps them, for the
 * memory estimate and on GPU profiles the layers' time (sim/compute.h). */
enum sim_attention { SIM_ATTN_AUTO = 0, SIM_ATTN_FUSED, SIM_ATTN_MATH };

/* DDP communication hooks (docs/cost-models.md, PyTorch's
 * default_hooks.py and powerSGD_hook.py). */
typedef core_compression sim_compression; /* core/vocab.h */

/* Sweep dimensions, outermost first; a point is one index per dimension.
 * A dimension of one value leaves every point's index as it was.
 * The job-level ones (the numbers of failures, the checkpoint's cost, mode,
 * spares and interval) are innermost, so the points of one step-level
 * configuration are consecutive, and so are the intervals of one
 * configuration of everything else. */
enum sim_dim {
  SIM_DIM_MODEL = 0,
  SIM_DIM_NETWORK,
  SIM_DIM_FABRIC,
  SIM_DIM_BACKEND,
  SIM_DIM_ALGORITHM,
  SIM_DIM_PRECISION,
  SIM_DIM_BATCH,
  SIM_DIM_BUCKET_CAP,
  SIM_DIM_OVERLAP,
  SIM_DIM_FIND_UNUSED,
  SIM_DIM_COMPRESSION,
  SIM_DIM_PER_NODE,
  SIM_DIM_NODES,
  SIM_DIM_FAIL_RATE,
  SIM_DIM_WEIBULL_SHAPE,
  SIM_DIM_DETECT,
  SIM_DIM_MTTR,
  SIM_DIM_RESTART,
  SIM_DIM_LOAD,
  SIM_DIM_CKPT_COST,
  SIM_DIM_CKPT_MODE,
  SIM_DIM_SPARES,
  SIM_DIM_CKPT_EVERY,
  SIM_N_DIMS
};
#define SIM_N_STEP_DIMS SIM_DIM_FAIL_RATE

typedef struct sim_scenario {
  core_cfg cfg; /* kept open: names are borrowed from it */
  char path[4096];
  char name[128];
  char description[512];
  char profile_path[4096];
  char profile_override[4096]; /* used instead of the file's profile when set */
  core_profile *profile;
  int n_models;
  core_model **models;
  int n_networks;
  sim_network *networks;
  int n_fabrics; /* 0: no fabric group (sim/fabric.h) */
  struct sim_fabric *fabrics;
  int n[SIM_N_DIMS]; /* values per dimension */
  enum sim_backend *backends;
  int *algorithms; /* enum sim_algo, or -1 for "auto" */
  enum sim_precision *precisions;
  long long *batch;
  double *bucket_cap_mb;
  int *overlap;
  int *find_unused; /* ddp.find_unused_parameters */
  long long *per_node;
  long long *nodes;
  sim_compression *compression;
  double powersgd_min_rate; /* PyTorch's min_compression_rate, default 2 */
  double first_bucket_mb;   /* SIM_FIRST_BUCKET_CAP: each point's bucket_cap_mb */
  int gradient_as_bucket_view;
  int zero_optimizer; /* ddp.zero_optimizer: ZeroRedundancyOptimizer (sim/memfit.h, sim/predict.h) */
  double timeout_s;   /* 0: the backend's default */
  enum sim_optimizer optimizer;
  enum sim_attention attention; /* training.attention */
  int steps;                    /* simulated steps per point */
  uint64_t seed;
  int every_rank;
  double max_points;                      /* simulation.max_points, a whole number: the study's points (sim/bounds.h) */
  const config_setting_t *max_points_key; /* NULL when not given; borrowed from the file */
  char csv_name[256];
  sim_job_cfg job;
  sim_prices prices;
  sim_objective objective;
  struct sim_layer_cache *layer_cache; /* sim/layer_cache.h; NULL: every point costs its layers */
} sim_scenario;

typedef struct sim_point {
  long index;
  const core_model *model;
  const sim_network *network;
  const struct sim_fabric *fabric; /* NULL without a fabric group */
  /* Set only inside the fabric's contention loop (sim/fabric.h): the
   * slowdowns to use, one representative rank. */
  const struct sim_fabric_given *fabric_given;
  enum sim_backend backend;
  int algorithm; /* -1 = auto */
  enum sim_precision precision;
  int batch;
  double bucket_cap_mb;
  int overlap;
  int find_unused; /* find_unused_parameters=True: capped buckets, never rebuilt */
  sim_compression compression;
  int per_node, nodes;
  /* Job level (when the scenario has one). */
  double fail_rate_h; /* mtbf_h or weibull_scale_h */
  double weibull_shape;
  double detect_s, mttr_h, restart_s, load_s, ckpt_cost_s; /* < 0: the default (jobcfg.h) */
  int ckpt_async;
  long long spares;
  double ckpt_every;   /* seconds, or steps if job.every_in_steps; 0: none */
  long step_index;     /* the point's index among step-level configurations */
  long group;          /* its index among groups of points that differ only in the interval */
  long crn_index;      /* the point of its nodes, devices per node and failure distribution with
                             * every other setting the first: its failures are drawn from this index's
                             * seed, so that points alike in these face the same failures (common
                             * random numbers) */
  long step_crn_index; /* the point of its nodes and devices per node with every other setting the
                        * first: its steps' jitter is drawn from this index's seed, so that points
                        * of the same world draw the same (common random numbers) */
} sim_point;

int sim_scenario_load(const char *path, sim_scenario **out);
/* The same with another profile instead of the scenario's own (the file's
 * profile key is still required; paths in it resolve as usual). profile
 * NULL: the scenario's; "" is refused (CORE_EUSAGE), not taken for NULL. */
int sim_scenario_load_with(const char *path, const char *profile, sim_scenario **out);
/* Parse text as if it were the file `name` (tests, fuzzing). Relative paths
 * resolve against name's directory. */
int sim_scenario_load_string(const char *text, const char *name, sim_scenario **out);
void sim_scenario_free(sim_scenario *s);

long sim_scenario_points(const sim_scenario *s);
void sim_scenario_point(const sim_scenario *s, long index, sim_point *p);
/* A point in messages, told apart from the others: "point 3 (model mlp,
 * 2 x 1, batch 8, network 1GbE, gloo)" (nodes x devices per node). */
void sim_point_name(const sim_point *p, char *buf, size_t n);

/* Seconds after which the backend aborts a collective (scenario or default). */
double sim_scenario_timeout(const sim_scenario *s, enum sim_backend b);

/* Defaults, with their sources. */
#define SIM_NCCL_TIMEOUT_S 600.0 /* torch/distributed/constants.py: default_pg_nccl_timeout, 10 min */
#define SIM_GLOO_TIMEOUT_S 30.0  /* gloo/rendezvous/store.h kDefaultTimeout and Gloo's context default, 30 s */
/* simulation.max_events by default: under a minute of one core per point
 * at the job level's slowest rate (bench/bench_sim prints it), a hundred
 * times the events of a point of scenarios/node-failure.cfg. */
#define SIM_DEFAULT_MAX_EVENTS 2e8
/* simulation.max_points by default: a million points, whose results alone
 * hold about 1.5 GB (one sim_point_result each) and whose CSV as many rows;
 * a bigger study is more often an array too many than one meant. */
#define SIM_DEFAULT_MAX_POINTS 1000000
/* simulation.tie_goodput by default: goodputs closer than this are a tie
 * (0.1%: of a 54-day run, about an hour). */
#define SIM_DEFAULT_TIE_GOODPUT 1e-3

#endif
