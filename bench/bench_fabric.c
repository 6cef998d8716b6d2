/*
 * bench_fabric — the fabric model's figures (issue 29):
 *  1. one allreduce on a 1:1 three-tier fat tree against the single-link
 *     model without a fabric: ring, tree, hierarchical and NCCL's choice,
 *     2 to 4,096 nodes, 1 MB to 1 GB (goal: within 1%);
 *  2. an oversubscribed fabric (o:1 at the leaves, ranks in random order on
 *     1,024 nodes, so nearly every hop leaves its leaf): each algorithm's
 *     slowdown from the flows against the closed form of the spine's share
 *     (a flow gets 1/o of a NIC where all of a leaf's flows go up: the ring
 *     o; the tree, whose busiest NICs carry three flows and whose leaves send
 *     two a NIC on average, 2o/3), and a 25 MB and a 1 GB allreduce's time;
 *  3. published at-scale NCCL bus bandwidths beside the prediction for the
 *     same shape (sources in the table).
 * Usage: bench_fabric [SOURCE_DIR]  (default: the source tree it was built from)
 */
#include "sim/fabric.h"
#include "sim/predict.h"
#include "sim/scenario.h"

#include "core/err.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *src;

/* A scenario from text; the profile and model paths are the source tree's. */
static sim_scenario *load(const char *profile, int nodes, int nics, double gbps, const char *fabric, const char *algo) {
  char text[8192];
  snprintf(text, sizeof text,
      "profile = \"%s/scenarios/profiles/%s\";\n"
      "model = \"%s/scenarios/models/resnet50.cfg\";\n"
      "training = { batch = 32; precision = \"amp_bf16\"; };\n"
      "cluster = { nodes = %d; devices_per_node = 8; };\n"
      "networks = ( { name = \"net\"; gbps = %g; latency_us = 14.0; nics_per_node = %d; efficiency = 0.96; } );\n"
      "%s\nddp = { backend = \"nccl\"; algorithm = \"%s\"; };\n",
      src, profile, src, nodes, gbps, nics, fabric, algo);
  sim_scenario *s;
  if (sim_scenario_load_string(text, "bench-fabric.cfg", &s)) {
    fprintf(stderr, "bench_fabric: %s\n", core_err_msg());
    return NULL;
  }
  return s;
}

/* One allreduce of S bytes at point 0: with the fabric, and (*plain) with
 * the same network as a single link. */
static int allreduce(sim_scenario *s, double S, sim_engine *e, double *T, double *plain, double *slow, int *used) {
  sim_point p;
  sim_topo t;
  sim_scenario_point(s, 0, &p);
  if (sim_predict_topo(s, &p, &t))
    return -1;
  *plain = sim_predict_allreduce(&p, &t, S);
  if (!p.fabric) {
    *T = *plain;
    return 0;
  }
  sim_fabric_costs fc;
  if (sim_fabric_costs_for(s, &p, &t, e, &fc))
    return -1;
  *T = sim_fabric_allreduce(&fc, p.backend, p.algorithm, S, used);
  *slow = fc.slowdown[*used];
  return 0;
}

static int one_to_one(sim_engine *e) {
  static const char *const algos[] = {"ring", "tree", "hierarchical", "auto"};
  static const int nodes[] = {2, 16, 128, 1024, 4096};
  static const double sizes[] = {1e6, 25e6, 256e6, 1e9};
  const char *fab = "fabric = { leaf = { ports = 64; }; spine = { ports = 64; }; core = { ports = 64; }; "
                    "rail_optimized = true; rank_order = \"random\"; };";
  double worst = 0;
  int n = 0;
  for (int a = 0; a < 4; a++)
    for (int k = 0; k < 5; k++) {
      sim_scenario *s = load("dgx-h100.cfg", nodes[k], 8, 400, fab, algos[a]);
      if (!s)
        return 1;
      for (int z = 0; z < 4; z++) {
        double T, plain, slow;
        int used;
        if (allreduce(s, sizes[z], e, &T, &plain, &slow, &used)) {
          fprintf(stderr, "bench_fabric: %s\n", core_err_msg());
          sim_scenario_free(s);
          return 1;
        }
        worst = fmax(worst, fabs(T / plain - 1));
        n++;
      }
      sim_scenario_free(s);
    }
  printf("1:1 three-tier fat tree vs the single-link model: %d allreduces (ring, tree, hierarchical, auto; "
         "2-4,096 nodes of 8 H100s; 1 MB-1 GB): largest difference %.3g%%\n",
      n, worst * 100);
  return 0;
}

static int oversubscribed(sim_engine *e) {
  /* Leaf ports that split o:1 into whole ports. */
  static const double os[] = {2.0, 3.0, 4.0, 7.0};
  static const int ports[] = {48, 64, 40, 64};
  printf("\no:1 leaves, 1,024 DGX H100 nodes (8 NDR NICs), ranks in random order; slowdown of each algorithm's "
         "slowest flow vs the closed form of the spine's share, and the allreduce's time on o:1 over 1:1\n");
  printf("%5s %-5s %12s %10s %12s %10s %14s %14s\n", "o", "rails", "ring", "closed", "tree", "closed", "T(25MB) o/1",
      "T(1GB) o/1");
  for (int rail = 1; rail >= 0; rail--)
    for (int k = 0; k < 4; k++) {
      char fab[512], one[512];
      snprintf(fab, sizeof fab,
          "fabric = { leaf = { ports = %d; oversubscription = %g; }; spine = { ports = 64; }; "
          "core = { ports = 64; }; rail_optimized = %s; rank_order = \"random\"; };",
          ports[k], os[k], rail ? "true" : "false");
      snprintf(one, sizeof one,
          "fabric = { leaf = { ports = 64; }; spine = { ports = 64; }; core = { ports = 64; }; "
          "rail_optimized = %s; rank_order = \"random\"; };",
          rail ? "true" : "false");
      double slow[2], T[2][2], T1[2][2], plain;
      for (int a = 0; a < 2; a++) {
        sim_scenario *s = load("dgx-h100.cfg", 1024, 8, 400, fab, a ? "tree" : "ring");
        sim_scenario *s1 = load("dgx-h100.cfg", 1024, 8, 400, one, a ? "tree" : "ring");
        int used, bad = !s || !s1;
        double x;
        for (int z = 0; z < 2 && !bad; z++)
          bad = allreduce(s, z ? 1e9 : 25e6, e, &T[a][z], &plain, &slow[a], &used) ||
                allreduce(s1, z ? 1e9 : 25e6, e, &T1[a][z], &plain, &x, &used);
        sim_scenario_free(s);
        sim_scenario_free(s1);
        if (bad) {
          fprintf(stderr, "bench_fabric: %s\n", core_err_msg());
          return 1;
        }
      }
      printf("%5g %-5s %12.4f %10.4f %12.4f %10.4f %14.4f %14.4f   (ring; tree %.4f, %.4f)\n", os[k],
          rail ? "yes" : "no", slow[0], os[k], slow[1], 2 * os[k] / 3 > 1 ? 2 * os[k] / 3 : 1.0, T[0][0] / T1[0][0],
          T[0][1] / T1[0][1], T[1][0] / T1[1][0], T[1][1] / T1[1][1]);
    }
  return 0;
}

/* Published bus bandwidths of NCCL allreduces (nccl-tests' busbw). */
typedef struct published {
  const char *what, *url, *profile, *algo;
  int nodes, nics;
  double gbps, bytes, busbw;
  const char *fabric;
} published;

static int at_scale(sim_engine *e) {
  static const published pub[] = {
      {"1,984 H200 (248 nodes x 8, 8 IB NICs), 512 MB, NCCL's choice: 'typically around 350' GB/s",
          "https://github.com/NVIDIA/nccl-tests/issues/283", "dgx-h100.cfg", "auto", 248, 8, 400, 512e6, 350,
          "fabric = { leaf = { ports = 64; }; spine = { ports = 64; }; core = { ports = 64; }; rail_optimized = true; "
          "intra = \"nvswitch\"; in_network = \"nvls\"; };"},
      {"DGX A100, 8 x 200 Gb/s IB a node, ring across nodes: 192 GB/s (NVIDIA's own figure; 4 nodes assumed)",
          "https://github.com/NVIDIA/nccl/issues/812", "dgx-a100.cfg", "ring", 4, 8, 200, 8e9, 192, ""},
      {"40 H100 (5 nodes x 8), 4 x 400 Gb/s RoCE a node, 1 GB: ring 190 GB/s",
          "https://github.com/NVIDIA/nccl/issues/1368", "dgx-h100.cfg", "ring", 5, 4, 400, 1e9, 190, ""},
      {"40 H100 (5 nodes x 8), 4 x 400 Gb/s RoCE a node, 1 GB: tree 150 GB/s",
          "https://github.com/NVIDIA/nccl/issues/1368", "dgx-h100.cfg", "tree", 5, 4, 400, 1e9, 150, ""},
  };
  printf("\npublished NCCL allreduce bus bandwidth beside the prediction (datasheet profiles, 0.96 of line rate)\n");
  for (size_t i = 0; i < sizeof pub / sizeof *pub; i++) {
    const published *x = &pub[i];
    sim_scenario *s = load(x->profile, x->nodes, x->nics, x->gbps, x->fabric, x->algo);
    double T, plain, slow = 1;
    int used = -1;
    if (!s || allreduce(s, x->bytes, e, &T, &plain, &slow, &used)) {
      fprintf(stderr, "bench_fabric: %s\n", core_err_msg());
      sim_scenario_free(s);
      return 1;
    }
    int p = x->nodes * 8;
    double busbw = x->bytes / T * 2.0 * (p - 1) / p / 1e9;
    printf("  %s\n    %s\n    published %.0f GB/s, predicted %.0f GB/s (%s), %+.0f%%\n", x->what, x->url, x->busbw,
        busbw, used >= 0 ? sim_algo_name((enum sim_algo)used) : x->algo, (busbw / x->busbw - 1) * 100);
    sim_scenario_free(s);
  }
  return 0;
}

int main(int argc, char **argv) {
  src = argc > 1 ? argv[1] : DDPSIM_SOURCE_DIR;
  sim_engine *e;
  if (sim_engine_new(&e))
    return 1;
  int rc = one_to_one(e) || oversubscribed(e) || at_scale(e);
  sim_engine_free(e);
  return rc;
}
