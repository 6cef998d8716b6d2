/* sim/replay: a traced step replayed against closed forms. Host-bound, the
 * step is the host's dispatch time; device-bound, the compute stream's work
 * (the host runs ahead); a bucket is launched when its last gradient
 * arrives, starts after the compute stream's work dispatched before it, and
 * compute beside it runs overlap_slowdown times slower; finalize waits for
 * the last allreduce, after the wait the trace measured for the later rank
 * (its skew); with overlap off every bucket goes at finalize (refused
 * in a step without one); a
 * sync makes the host wait for the streams it names; side work waits for the
 * stream it depends on, or, held back by the compute stream's kernels, for
 * the compute-stream piece running when it could start. Retargeted,
 * compute-bound device time scales by the peak ratio, memory-bound by the
 * bandwidth ratio, launch-bound by neither (nor by the batch). And
 * core/traced's file form round-trips. */
#include "testutil.h"

#include "core/bucket.h"
#include "core/cfg.h"
#include "core/err.h"
#include "core/traced.h"
#include "sim/replay.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define US 1e-6
#define NEAR(a, b) (fabs((a) - (b)) < 1e-12 + 1e-9 * fabs(b))

enum { MAXP = 16 };

typedef struct fixture {
  core_traced t;
  core_piece p[MAXP];
  core_side side[4];
  core_sync sync[4];
  core_buckets bk;
  int tb[4], bf[4], bt[4];
  int64_t be[4];
  double comm[4];
} fixture;

static core_piece *add(fixture *f, enum core_piece_kind k, int index, double host_us, double dev_us) {
  core_piece *p = &f->p[f->t.n_pieces++];
  memset(p, 0, sizeof *p);
  p->kind = k;
  p->index = index;
  p->host_s = host_us * US;
  p->dev_s = dev_us * US;
  return p;
}

/* A model of two tensors, one bucket each (tensor 1 arrives first). */
static void init(fixture *f, int ddp) {
  memset(f, 0, sizeof *f);
  f->t.pieces = f->p;
  f->t.side = f->side;
  f->t.syncs = f->sync;
  f->t.world_size = 2;
  f->t.ddp = ddp;
  f->t.overlap_slowdown = 1.0;
  f->bk.n_tensors = 2;
  f->bk.n_buckets = 2;
  f->bk.tensor_bucket = f->tb;
  f->bk.bucket_first = f->bf;
  f->bk.bucket_tensors = f->bt;
  f->bk.bucket_elems = f->be;
  f->tb[1] = 0, f->tb[0] = 1; /* tensor 1 in bucket 0, tensor 0 in bucket 1 */
  f->bf[0] = 0, f->bf[1] = 1, f->bf[2] = 2;
  f->bt[0] = 1, f->bt[1] = 0;
}

static sim_replay_result run(fixture *f, int overlap) {
  sim_replay_cfg c = {.t = &f->t, .bk = &f->bk, .bucket_comm_s = f->comm, .dev_scale = 1.0, .overlap = overlap};
  sim_replay_result r;
  int rc = sim_replay_run(&c, &r, NULL);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  CU_ASSERT_EQUAL(rc, 0);
  return r;
}

static void test_host_and_device_bound(void) {
  fixture f;
  init(&f, 0);
  add(&f, CORE_PIECE_FWD, 0, 300, 100);
  add(&f, CORE_PIECE_BWD, 0, 400, 150);
  add(&f, CORE_PIECE_OTHER, -1, 100, 50);
  sim_replay_result r = run(&f, 1);
  CU_ASSERT(NEAR(r.step_s, 800 * US)); /* the host's 800 us; the device idles */
  CU_ASSERT(NEAR(r.compute_s, 800 * US));
  CU_ASSERT(NEAR(r.host_s, 800 * US) && NEAR(r.device_s, 300 * US));
  f.p[0].dev_s = 1000 * US; /* now the compute stream's 1,200 us is the step */
  r = run(&f, 1);
  CU_ASSERT(NEAR(r.step_s, 1200 * US));
}

/* A device-bound step: forward 100 us, backward 300 us then 1,000 us of
 * compute-stream work, tensor 1 arriving between them (bucket 0, 400 us of
 * allreduce), tensor 0 after (bucket 1, 50 us), finalize 20 us on the device.
 * The host's 770 us a step (launches of 10 us each included) runs ahead. */
static void comm_fixture(fixture *f) {
  init(f, 1);
  add(f, CORE_PIECE_FWD, 0, 100, 100);
  add(f, CORE_PIECE_BWD, 0, 300, 300);
  add(f, CORE_PIECE_GRAD, 1, 100, 0);
  add(f, CORE_PIECE_BWD, 0, 100, 1000);
  add(f, CORE_PIECE_GRAD, 0, 100, 0);
  add(f, CORE_PIECE_FINALIZE, -1, 50, 20);
  f->t.launch_host_s = 10 * US;
  f->comm[0] = 400 * US;
  f->comm[1] = 50 * US;
}

static void test_buckets_overlap_and_finalize(void) {
  fixture f;
  comm_fixture(&f);
  /* Bucket 0 runs beside the 1,000 us of backward; bucket 1 after it (its
   * launch waits for the compute stream's work dispatched before), then
   * finalize after bucket 1: 100 + 300 + 1,000 + 50 + 20 a step. Free
   * communication: 1,420; so 50 exposed. */
  sim_replay_result r = run(&f, 1);
  CU_ASSERT(NEAR(r.step_s, 1470 * US));
  CU_ASSERT(NEAR(r.compute_s, 1420 * US));
  CU_ASSERT(NEAR(r.exposed_comm_s, 50 * US));
  CU_ASSERT(NEAR(r.comm_s, 450 * US));
  /* Compute beside an allreduce at half speed: of the 1,000 us, 200 done in
   * bucket 0's 400, the other 800 after: 1,200. */
  f.t.overlap_slowdown = 2.0;
  r = run(&f, 1);
  CU_ASSERT(NEAR(r.step_s, 1670 * US));
  CU_ASSERT(NEAR(r.compute_s, 1420 * US));
  /* A lighter backward: the allreduces are the device's critical path,
   * 100 + 300 + 400 + 50 + 20; and with a short bucket 0 the host's 770. */
  f.t.overlap_slowdown = 1.0;
  f.p[3].dev_s = 100 * US;
  r = run(&f, 1);
  CU_ASSERT(NEAR(r.step_s, 870 * US));
  f.comm[0] = 100 * US;
  r = run(&f, 1);
  CU_ASSERT(NEAR(r.step_s, 770 * US));
}

/* The ranks' skew kept as measured wait: the lighter backward of
 * test_buckets_overlap_and_finalize (allreduces on the critical path, 870 us)
 * with traced buckets that took 300 us more than their fastest steps (700
 * and 50 us against 400 and 50, the transfer the profile gives): the step
 * takes the 300 us more. Buckets other than the traced ones (three traced,
 * two replayed, of 3 and 1 elements) share the 300 by their bytes (225 and
 * 75): the same step, however many buckets. Free communication waits for
 * nothing: the host's 770 us. */
static void test_skew_wait(void) {
  fixture f;
  comm_fixture(&f);
  f.p[3].dev_s = 100 * US;
  double us[3] = {700 * US, 50 * US, 0}, min[3] = {400 * US, 50 * US, 0};
  f.t.n_buckets = 2;
  f.t.bucket_s = us;
  f.t.bucket_min_s = min;
  sim_replay_result r = run(&f, 1);
  CU_ASSERT(NEAR(r.step_s, 1170 * US));
  CU_ASSERT(NEAR(r.compute_s, 770 * US)); /* the host's */
  f.t.n_buckets = 3;
  us[2] = min[2] = 1000 * US;
  f.be[0] = 3, f.be[1] = 1;
  r = run(&f, 1);
  CU_ASSERT(NEAR(r.step_s, 1170 * US));
  CU_ASSERT(NEAR(r.compute_s, 770 * US)); /* the host's */
  f.t.bucket_min_s = NULL;                /* a model without the fastest steps: no wait */
  r = run(&f, 1);
  CU_ASSERT(NEAR(r.step_s, 870 * US));
}

/* Per-bucket waits only for the traced buckets: test_buckets_overlap_and_finalize's
 * step (1,470 us, bucket 0 hidden beside the 1,000 us of backward), its
 * traced buckets of 12 and 4 bytes waiting 300 and 0 us. Replayed with
 * those bytes, bucket 0's wait stays hidden: 1,470. As many buckets of other
 * bytes (4 and 12, 1 and 3 elements) share the 300 by bytes, 75 and 225, and
 * bucket 1's 225 comes after the backward: 1,695. So do buckets whose bytes
 * are not known beside a trace that records them. */
static void test_skew_wait_traced_buckets_only(void) {
  fixture f;
  comm_fixture(&f);
  double us[2] = {700 * US, 50 * US}, min[2] = {400 * US, 50 * US}, traced_bytes[2] = {12, 4}, bytes[2] = {12, 4};
  f.t.n_buckets = 2;
  f.t.bucket_s = us;
  f.t.bucket_min_s = min;
  f.t.bucket_bytes = traced_bytes;
  f.be[0] = 3, f.be[1] = 1;
  sim_replay_cfg c = {
      .t = &f.t, .bk = &f.bk, .bucket_comm_s = f.comm, .bucket_bytes = bytes, .dev_scale = 1.0, .overlap = 1};
  sim_replay_result r;
  CU_ASSERT_EQUAL_FATAL(sim_replay_run(&c, &r, NULL), 0);
  CU_ASSERT(NEAR(r.step_s, 1470 * US));
  CU_ASSERT(NEAR(r.comm_s, 450 * US)); /* the transfers, without the wait */
  f.be[0] = 1, f.be[1] = 3;
  bytes[0] = 4, bytes[1] = 12;
  CU_ASSERT_EQUAL_FATAL(sim_replay_run(&c, &r, NULL), 0);
  CU_ASSERT(NEAR(r.step_s, 1695 * US));
  CU_ASSERT(NEAR(r.exposed_comm_s, 275 * US)); /* the wait included: 1,695 - 1,420 */
  CU_ASSERT(NEAR(r.comm_s, 450 * US));
  c.bucket_bytes = NULL;
  CU_ASSERT_EQUAL_FATAL(sim_replay_run(&c, &r, NULL), 0);
  CU_ASSERT(NEAR(r.step_s, 1695 * US));
}

static void test_overlap_off(void) {
  fixture f;
  comm_fixture(&f);
  /* Both buckets just before finalize, after all the backward: 100 + 300 +
   * 1,000 + 400 + 50 + 20. */
  sim_replay_result r = run(&f, 0);
  CU_ASSERT(NEAR(r.step_s, 1870 * US));
  /* A step without finalize (no copies back) does not show where DDP waits
   * for its allreduces: overlap off is refused saying so. */
  f.t.n_pieces--;
  sim_replay_cfg c = {.t = &f.t, .bk = &f.bk, .bucket_comm_s = f.comm, .dev_scale = 1.0, .overlap = 0};
  CU_ASSERT_EQUAL(sim_replay_run(&c, &r, NULL), CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "ddp.overlap = false: the traced step has no DDP finalize") != NULL);
}

static void test_sync_and_side(void) {
  fixture f;
  init(&f, 0);
  f.t.streams = 1;
  core_piece *p = add(&f, CORE_PIECE_OTHER, -1, 100, 500);
  add(&f, CORE_PIECE_OTHER, -1, 100, 0);
  /* piece 0 launches side work (400 us) half-way, which waits for the
   * compute stream's 500 us; piece 1's host waits for the side stream at its
   * start (a blocking copy). */
  p->n_side = 1;
  f.side[0] = (core_side){.at = 0.5, .stream = 1, .dur_s = 400 * US, .dep = 0};
  f.t.n_side = 1;
  f.p[1].n_sync = 1;
  f.sync[0] = (core_sync){.at = 0.0, .streams = 1ull << 1};
  f.t.n_syncs = 1;
  /* Step: device 0-500, side 500-900, host waits until 900, then 100:
   * 1,000 the first step; later ones start with the host at 1,000 and the
   * same chain: period 1,000. */
  sim_replay_result r = run(&f, 1);
  CU_ASSERT(NEAR(r.step_s, 1000 * US));
  f.sync[0].streams = 1; /* the compute stream only: host waits to 500 */
  r = run(&f, 1);
  CU_ASSERT(NEAR(r.step_s, 600 * US));
}

/* Side work the compute stream's kernels held back starts when the
 * compute-stream piece running when it could start ends: not at once (no
 * wait), nor after all the compute work dispatched before it (a wait for the
 * compute stream). */
static void test_held_side(void) {
  fixture f;
  init(&f, 0);
  f.t.streams = 1;
  add(&f, CORE_PIECE_OTHER, -1, 100, 500);
  core_piece *p = add(&f, CORE_PIECE_OTHER, -1, 100, 300);
  add(&f, CORE_PIECE_OTHER, -1, 100, 0);
  /* piece 1 launches 400 us of side work half-way (host 150); piece 2's
   * host waits for it at its start */
  p->n_side = 1;
  f.side[0] = (core_side){.at = 0.5, .stream = 1, .dur_s = 400 * US, .dep = -1, .held = 1};
  f.t.n_side = 1;
  f.p[2].n_sync = 1;
  f.sync[0] = (core_sync){.at = 0.0, .streams = 1ull << 1};
  f.t.n_syncs = 1;
  /* Held: piece 0's compute (0-500) runs at 150, the side work 500-900, the
   * host waits to 900 and ends at 1,000: a period of 1,000. */
  sim_replay_result r = run(&f, 1);
  CU_ASSERT(NEAR(r.step_s, 1000 * US));
  /* Not held: the side work runs from the launch; the compute stream (800
   * a step) is the bottleneck. */
  f.side[0].held = 0;
  r = run(&f, 1);
  CU_ASSERT(NEAR(r.step_s, 800 * US));
  /* Waiting for the compute stream: after piece 1's compute too (800), the
   * host to 1,200 + 100. */
  f.side[0].dep = 0;
  r = run(&f, 1);
  CU_ASSERT(NEAR(r.step_s, 1300 * US));
}

static void test_file_round_trip(void) {
  fixture f;
  comm_fixture(&f);
  snprintf(f.t.device, sizeof f.t.device, "GPU X");
  snprintf(f.t.backend, sizeof f.t.backend, "nccl");
  f.t.steps = 3;
  f.t.step_s = 0.9e-3, f.t.step_min_s = 0.85e-3, f.t.step_max_s = 0.95e-3;
  f.t.streams = 2;
  f.p[1].first_side = 0;
  f.side[0] = (core_side){.at = 0.25, .stream = 2, .dur_s = 33 * US, .dep = 1, .nccl = 1};
  f.side[1] = (core_side){.at = 0.5, .stream = 1, .dur_s = 12 * US, .dep = -1, .held = 1};
  f.p[1].n_side = 2;
  f.t.n_side = 2;
  f.p[5].n_sync = 1;
  f.sync[0] = (core_sync){.at = 0.5, .streams = 5};
  f.t.n_syncs = 1;
  f.p[3].waits = 1ull << 2;
  f.p[2].copy_host_s = 5 * US;
  f.p[1].classed = 1;
  f.p[1].dev_class_s[CORE_DEV_COMPUTE] = f.p[1].dev_s * 0.75;
  f.p[1].dev_class_s[CORE_DEV_LAUNCH] = f.p[1].dev_s * 0.25;
  f.t.precision = CORE_PREC_TF32;
  f.t.peak_flops = 156e12;
  f.t.peak_memory_Bps = 1555e9;
  config_t cfg;
  config_init(&cfg);
  CU_ASSERT_EQUAL_FATAL(core_traced_write(&f.t, config_root_setting(&cfg)), 0);
  core_traced *back = NULL;
  int rc = core_traced_parse(config_lookup(&cfg, "traced"), 1, 2, &back);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  CU_ASSERT_FATAL(rc == 0 && back);
  CU_ASSERT_EQUAL(back->n_pieces, f.t.n_pieces);
  for (int i = 0; i < f.t.n_pieces; i++) {
    CU_ASSERT_EQUAL(back->pieces[i].kind, f.p[i].kind);
    CU_ASSERT_EQUAL(back->pieces[i].index, f.p[i].index);
    CU_ASSERT(NEAR(back->pieces[i].host_s, f.p[i].host_s) && NEAR(back->pieces[i].dev_s, f.p[i].dev_s));
    CU_ASSERT_EQUAL(back->pieces[i].waits, f.p[i].waits);
    CU_ASSERT_EQUAL(back->pieces[i].n_side, f.p[i].n_side);
    CU_ASSERT_EQUAL(back->pieces[i].n_sync, f.p[i].n_sync);
  }
  CU_ASSERT(NEAR(back->pieces[2].copy_host_s, 5 * US));
  CU_ASSERT(back->side[0].stream == 2 && back->side[0].dep == 1 && back->side[0].nccl == 1 && !back->side[0].held);
  CU_ASSERT(back->side[1].stream == 1 && back->side[1].dep == -1 && back->side[1].held && !back->side[1].nccl);
  CU_ASSERT(NEAR(back->side[0].at, 0.25) && NEAR(back->side[0].dur_s, 33 * US));
  CU_ASSERT(back->syncs[0].streams == 5 && NEAR(back->syncs[0].at, 0.5));
  CU_ASSERT(back->ddp == 1 && back->world_size == 2 && back->steps == 3 && NEAR(back->launch_host_s, 10 * US));
  CU_ASSERT_STRING_EQUAL(back->device, "GPU X");
  CU_ASSERT(back->pieces[1].classed && !back->pieces[0].classed && !back->classed);
  CU_ASSERT(NEAR(back->pieces[1].dev_class_s[CORE_DEV_COMPUTE], f.p[1].dev_s * 0.75) &&
            NEAR(back->pieces[1].dev_class_s[CORE_DEV_LAUNCH], f.p[1].dev_s * 0.25));
  CU_ASSERT(back->precision == CORE_PREC_TF32 && NEAR(back->peak_flops, 156e12) && NEAR(back->peak_memory_Bps, 1555e9));
  core_traced_free(back);
  config_destroy(&cfg);
}

/* A device-bound step whose pieces split their device time by class,
 * replayed on another GPU at twice the batch: compute x 0.25 x 2, memory x
 * 0.5 x 2, launch as traced; without classes, everything x 2. */
static void test_retarget_classes(void) {
  fixture f;
  init(&f, 0);
  core_piece *a = add(&f, CORE_PIECE_FWD, 0, 10, 600), *b = add(&f, CORE_PIECE_BWD, 0, 10, 400);
  a->classed = b->classed = 1;
  a->dev_class_s[CORE_DEV_COMPUTE] = 500 * US, a->dev_class_s[CORE_DEV_MEMORY] = 80 * US;
  a->dev_class_s[CORE_DEV_LAUNCH] = 20 * US;
  b->dev_class_s[CORE_DEV_MEMORY] = 390 * US, b->dev_class_s[CORE_DEV_LAUNCH] = 10 * US;
  sim_replay_cfg c = {
      .t = &f.t, .bk = &f.bk, .bucket_comm_s = f.comm, .dev_scale = 2.0, .compute_scale = 0.25, .memory_scale = 0.5};
  sim_replay_result r;
  CU_ASSERT_EQUAL_FATAL(sim_replay_run(&c, &r, NULL), 0);
  double want = (500 * 0.25 + 80 * 0.5) * 2 + 20 + 390 * 0.5 * 2 + 10;
  CU_ASSERT(NEAR(r.device_s, want * US) && NEAR(r.step_s, want * US));
  a->classed = 0; /* a piece without classes scales with the batch only */
  CU_ASSERT_EQUAL_FATAL(sim_replay_run(&c, &r, NULL), 0);
  CU_ASSERT(NEAR(r.step_s, (600 * 2 + 390 * 0.5 * 2 + 10) * US));
  /* Scales of 0 leave the step as traced. */
  sim_replay_cfg same = {.t = &f.t, .bk = &f.bk, .bucket_comm_s = f.comm, .dev_scale = 1.0};
  a->classed = 1;
  CU_ASSERT_EQUAL_FATAL(sim_replay_run(&same, &r, NULL), 0);
  CU_ASSERT(NEAR(r.step_s, 1000 * US));
}

/* The retargeting ratios: 1 on the traced GPU at the traced precision;
 * else the source's roofs over the target profile's peaks (fp32 and tf32
 * standing for each other); refused, naming file and key, onto CPUs, without classes,
 * without the source's roofs, without the target's peak or bandwidth, and
 * across widths. */
static void test_retarget_ratios(void) {
  core_traced t = {.classed = 1, .precision = CORE_PREC_FP32, .peak_flops = 20e12, .peak_memory_Bps = 2000e9};
  snprintf(t.device, sizeof t.device, "GPU X");
  core_profile *p = core_profile_new();
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  snprintf(p->device_name, sizeof p->device_name, "GPU X");
  double cs, ms;
  CU_ASSERT_EQUAL(sim_replay_retarget(&t, "m.cfg", p, "p.cfg", CORE_PREC_FP32, &cs, &ms), 0);
  CU_ASSERT(cs == 1 && ms == 1);
  snprintf(p->device_name, sizeof p->device_name, "GPU Y");
  CU_ASSERT_EQUAL(sim_replay_retarget(&t, "m.cfg", p, "p.cfg", CORE_PREC_FP32, &cs, &ms), CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "p.cfg") && strstr(core_err_msg(), "peak_tflops") && strstr(core_err_msg(), "fp32"));
  double *fl = malloc(sizeof *fl), *tf = malloc(sizeof *tf);
  CU_ASSERT_FATAL(fl && tf);
  fl[0] = 1e9, tf[0] = 50.0;
  p->rate[CORE_PREC_FP32] = (core_prof_rate){.present = 1, .n = 1, .gemm_flops = fl, .tflops = tf, .peak_tflops = 80.0};
  CU_ASSERT_EQUAL(sim_replay_retarget(&t, "m.cfg", p, "p.cfg", CORE_PREC_FP32, &cs, &ms), CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "p.cfg") && strstr(core_err_msg(), "peak_memory_GBps"));
  p->peak_memory_GBps = 8000.0;
  CU_ASSERT_EQUAL(sim_replay_retarget(&t, "m.cfg", p, "p.cfg", CORE_PREC_FP32, &cs, &ms), 0);
  CU_ASSERT(NEAR(cs, 20.0 / 80.0) && NEAR(ms, 2000.0 / 8000.0));
  /* A profile of CPUs is no GPU to retarget to, peaks or not. */
  char kind[sizeof p->device_kind];
  memcpy(kind, p->device_kind, sizeof kind);
  snprintf(p->device_kind, sizeof p->device_kind, "cpu");
  CU_ASSERT_EQUAL(sim_replay_retarget(&t, "m.cfg", p, "p.cfg", CORE_PREC_FP32, &cs, &ms), CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "p.cfg") && strstr(core_err_msg(), "CPUs") && strstr(core_err_msg(), "GPU X"));
  memcpy(p->device_kind, kind, sizeof kind);
  CU_ASSERT_EQUAL(sim_replay_retarget(&t, "m.cfg", p, "p.cfg", CORE_PREC_TF32, &cs, &ms), CORE_EINVAL);
  /* The profile has no tf32 at all (a V100's): the advice is its fp32, not a tf32 peak to add. */
  CU_ASSERT(strstr(core_err_msg(), "p.cfg") && strstr(core_err_msg(), "no tf32 rates") &&
            strstr(core_err_msg(), "training.precision = \"fp32\"") && !strstr(core_err_msg(), "add peak_tflops"));
  CU_ASSERT_EQUAL(sim_replay_retarget(&t, "m.cfg", p, "p.cfg", CORE_PREC_BF16, &cs, &ms), CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "m.cfg:") && strstr(core_err_msg(), "computed in fp32"));
  t.peak_memory_Bps = 0;
  CU_ASSERT_EQUAL(sim_replay_retarget(&t, "m.cfg", p, "p.cfg", CORE_PREC_FP32, &cs, &ms), CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "m.cfg:") && strstr(core_err_msg(), "peak_memory_GBps") &&
            strstr(core_err_msg(), "--profile-base"));
  t.classed = 0;
  CU_ASSERT_EQUAL(sim_replay_retarget(&t, "m.cfg", p, "p.cfg", CORE_PREC_FP32, &cs, &ms), CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "dev_compute_us") != NULL);
  core_profile_free(p);
}

/* A grad piece naming a tensor the model lacks, a side stream beyond
 * `streams`, entries out of piece order: file:line errors. */
static void test_file_errors(void) {
  static const struct {
    const char *text, *want;
  } bad[] = {
      {"traced = { world_size = 2; pieces = ( { kind = \"grad\"; tensor = 5; host_us = 1.0; dev_us = 0.0; } ); };",
          "'tensor'"},
      {"traced = { world_size = 2; streams = 1; pieces = ( { kind = \"other\"; host_us = 1.0; dev_us = 0.0; } );\n"
       "  side = ( { piece = 0; at = 0.5; stream = 2; us = 3.0; } ); };",
          "'stream'"},
      {"traced = { world_size = 2; pieces = ( { kind = \"other\"; host_us = 1.0; dev_us = 0.0; },\n"
       "  { kind = \"other\"; host_us = 1.0; dev_us = 0.0; } );\n"
       "  syncs = ( { piece = 1; at = 0.5; streams = [0]; }, { piece = 0; at = 0.5; streams = [0]; } ); };",
          "piece order"},
      {"traced = { world_size = 2; pieces = ( ); };", "needs its pieces"},
      {"traced = { world_size = 2; pieces = ( { kind = \"other\"; host_us = 1.0; dev_us = 5.0; dev_compute_us = 5.0; } "
       "); };",
          "all three or none"},
      {"traced = { world_size = 2; pieces = ( { kind = \"other\"; host_us = 1.0; dev_us = 5.0; dev_compute_us = 1.0;\n"
       "  dev_memory_us = 1.0; dev_launch_us = 1.0; } ); };",
          "must add up"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    core_cfg c;
    CU_ASSERT_EQUAL_FATAL(core_cfg_load_string(&c, bad[i].text, "bad.cfg", "model"), 0);
    core_traced *t = NULL;
    int rc = core_traced_parse(config_lookup(&c.cfg, "traced"), 1, 2, &t);
    CU_ASSERT_EQUAL(rc, CORE_EINVAL);
    CU_ASSERT_PTR_NULL(t);
    if (!strstr(core_err_msg(), bad[i].want) || !strstr(core_err_msg(), "bad.cfg:")) {
      fprintf(stderr, "\ncase %zu: %s\n", i, core_err_msg());
      CU_FAIL("message lacks file:line or what is wrong");
    }
    core_cfg_free(&c);
  }
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("replay", NULL, NULL);
  CU_add_test(s, "host-bound and device-bound steps", test_host_and_device_bound);
  CU_add_test(s, "buckets, compute beside them, finalize", test_buckets_overlap_and_finalize);
  CU_add_test(s, "the traced skew as a wait, shared by bytes", test_skew_wait);
  CU_add_test(s, "per-bucket skew waits only for the traced buckets", test_skew_wait_traced_buckets_only);
  CU_add_test(s, "overlap off: every bucket at finalize", test_overlap_off);
  CU_add_test(s, "syncs and side streams", test_sync_and_side);
  CU_add_test(s, "side work held back by the compute stream's kernels", test_held_side);
  s = CU_add_suite("traced file", NULL, NULL);
  CU_add_test(s, "write then parse gives the same step", test_file_round_trip);
  CU_add_test(s, "bad entries: file:line errors", test_file_errors);
  CU_add_test(s, "retargeted: each class at its own ratio", test_retarget_classes);
  CU_add_test(s, "retargeting ratios and what they need", test_retarget_ratios);
}
