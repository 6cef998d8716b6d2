/*
 * calibrate — measure the cluster a launch runs on into a profile: start-up
 * and rendezvous cost, collective sweeps inside a node and across nodes
 * (each in its own sub-group, one at a time so they do not share the links
 * or the CPUs), α–β fits, GEMM rates, memory bandwidth, per-layer times of
 * the given models (written as measured model files beside the profile),
 * step-time jitter, compute/communication interference and checkpoint I/O.
 * Every rank of the launch calls cal_run; rank 0 writes the results.
 */
#ifndef CALIBRATE_CALIBRATE_H
#define CALIBRATE_CALIBRATE_H

/* The most --model files one calibration times. */
enum { CAL_MAX_MODELS = 64 };

typedef struct cal_opts {
  const char *out;     /* profile path */
  const char *name;    /* profile name; NULL: the host name */
  const char *backend; /* "gloo" | "nccl" */
  int quick;
  double link_gbps;    /* nominal inter-node line rate, recorded in the profile; 0 = unknown */
  const char **models; /* model files to time per layer (at most CAL_MAX_MODELS) */
  int n_models;
  int batch;
  int threads; /* BLAS threads per rank, as training will run */
  double timeout_s;
  const char *scratch_dir; /* for the checkpoint I/O test */
  const char *rdzv;        /* rendezvous spec (default $DDPSIM_RDZV) */
  const char *bind;        /* listen address (default $DDPSIM_BIND_ADDR) */
  int progress;            /* -1 auto (stderr is a TTY), 0 off, 1 on */
} cal_opts;

/* Rank 0 checks, before it measures anything, that the profile and the
 * measured model files can be written and are none of the inputs. */
int cal_run(const cal_opts *o);

#endif
