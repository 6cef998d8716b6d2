/* Fabrics (sim/fabric.h, sim/fabric_net.h, sim/flows.h): max-min fair
 * sharing against its definition; the counted shortcut against the filling;
 * layouts; a ring whose every hop leaves its leaf slowed by exactly the
 * oversubscription (and by the background load); a 1:1 fabric giving the
 * single-link model's times; the in-network reductions; other jobs slowing
 * a job by the share of time they communicate; placement by seed. */
#include "sim/fabric.h"
#include "sim/fabric_net.h"
#include "sim/flows.h"
#include "sim/predict.h"
#include "sim/scenario.h"

#include "core/err.h"

#include "simutil.h"
#include "testutil.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rs;
static double uni(void) {
  uint64_t z = (rs += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

static int near(double a, double b, double tol) { return fabs(a - b) <= tol * fmax(fabs(a), fabs(b)); }

/* --- max-min fairness ------------------------------------------------------- */

/* Bertsekas and Gallager's kind of example: link 0 (1) holds A and B, link
 * 1 (2) holds B, C and D. Link 0 fills first at 1/2; C and D share the 1.5
 * left on link 1. */
static void test_maxmin_example(void) {
  sim_flows f;
  CU_ASSERT_FATAL(sim_flows_init(&f, 2) == 0);
  f.cap[0] = 1.0;
  f.cap[1] = 2.0;
  int a[] = {0}, b[] = {0, 1}, c[] = {1};
  sim_flows_add(&f, a, 1, 0);
  sim_flows_add(&f, b, 2, 0);
  sim_flows_add(&f, c, 1, 1);
  sim_flows_add(&f, c, 1, 1);
  double r[4], m;
  CU_ASSERT_FATAL(sim_flows_maxmin(&f, r) == 0);
  CU_ASSERT(near(r[0], 0.5, 1e-15) && near(r[1], 0.5, 1e-15) && near(r[2], 0.75, 1e-15) && near(r[3], 0.75, 1e-15));
  CU_ASSERT(sim_flows_min_rate(&f, 1, &m) == 0 && near(m, 0.75, 1e-15));
  CU_ASSERT(sim_flows_min_share(&f, -1, &m) == 0 && near(m, 0.5, 1e-15));
  sim_flows_free(&f);
}

/* Random networks: every flow has a full link on which no flow is faster
 * (the definition of max-min fairness); the smallest share counted is the
 * smallest rate filled; an owner's first stop is its slowest flow. */
static void test_maxmin_random(void) {
  rs = 4242;
  int bad_def = 0, bad_share = 0, bad_owner = 0;
  for (int trial = 0; trial < 300; trial++) {
    sim_flows f;
    int L = 2 + (int)(uni() * 20), F = 1 + (int)(uni() * 60);
    CU_ASSERT_FATAL(sim_flows_init(&f, L) == 0);
    for (int l = 0; l < L; l++)
      f.cap[l] = 0.5 + uni() * 10;
    for (int i = 0; i < F; i++) {
      int p[6], n = 1 + (int)(uni() * 5), k = 0;
      for (int j = 0; j < n; j++) {
        int l = (int)(uni() * L), dup = 0;
        for (int q = 0; q < k; q++)
          dup |= p[q] == l;
        if (!dup)
          p[k++] = l;
      }
      sim_flows_add(&f, p, k, (int)(uni() * 3));
    }
    double *r = malloc(sizeof *r * (size_t)F), *load = calloc((size_t)L, sizeof *load),
           *top = calloc((size_t)L, sizeof *top);
    CU_ASSERT_FATAL(sim_flows_maxmin(&f, r) == 0);
    for (int i = 0; i < F; i++)
      for (int k = f.start[i]; k < f.start[i + 1]; k++) {
        load[f.path[k]] += r[i];
        top[f.path[k]] = fmax(top[f.path[k]], r[i]);
      }
    double lowest = INFINITY, low_owner[3] = {INFINITY, INFINITY, INFINITY};
    for (int i = 0; i < F; i++) {
      int ok = 0;
      for (int k = f.start[i]; k < f.start[i + 1]; k++) {
        int l = f.path[k];
        ok |= near(load[l], f.cap[l], 1e-9) && r[i] >= top[l] * (1 - 1e-9);
      }
      bad_def += !ok;
      lowest = fmin(lowest, r[i]);
      low_owner[f.owner[i]] = fmin(low_owner[f.owner[i]], r[i]);
    }
    double m;
    CU_ASSERT(sim_flows_min_share(&f, -1, &m) == 0);
    bad_share += !near(m, lowest, 1e-12);
    for (int o = 0; o < 3; o++) {
      CU_ASSERT(sim_flows_min_rate(&f, o, &m) == 0);
      bad_owner += !(m == low_owner[o] || near(m, low_owner[o], 1e-12));
    }
    free(r);
    free(load);
    free(top);
    sim_flows_free(&f);
  }
  CU_ASSERT_EQUAL(bad_def, 0);
  CU_ASSERT_EQUAL(bad_share, 0);
  CU_ASSERT_EQUAL(bad_owner, 0);
}

/* --- layouts and flows ------------------------------------------------------ */

static sim_fabric clos(int tiers, int ports, double leaf_o, int rail) {
  sim_fabric f;
  memset(&f, 0, sizeof f);
  snprintf(f.name, sizeof f.name, "t");
  f.n_tiers = tiers;
  for (int t = 0; t < tiers; t++) {
    f.tier[t].present = 1;
    f.tier[t].ports = ports;
    f.tier[t].oversub = 1.0;
  }
  f.tier[SIM_TIER_LEAF].oversub = leaf_o;
  f.rail_optimized = rail;
  return f;
}

static void test_layout(void) {
  sim_fabric f = clos(3, 64, 1.0, 1);
  sim_fabric_layout L;
  CU_ASSERT_FATAL(sim_fabric_layout_for(&f, 1000, 8, 50e9, &L) == 0);
  /* Rail-optimized, 32 node ports a leaf: racks of 8 leaves and 32 nodes,
   * pods of 32 leaves (4 racks), 64 pods at most. */
  CU_ASSERT(L.nodes_per_rack == 32 && L.racks_per_pod == 4 && L.max_nodes == 8192);
  CU_ASSERT(L.racks == 32 && L.pods == 8 && L.leaves == 256);
  CU_ASSERT(near(L.leaf_up_Bps, 32 * 50e9, 1e-15) && near(L.pod_up_Bps, 32.0 * 32 * 50e9, 1e-15));
  f = clos(2, 64, 3.0, 0);
  CU_ASSERT_FATAL(sim_fabric_layout_for(&f, 100, 8, 50e9, &L) == 0);
  /* 3:1: 48 node ports, 6 nodes a leaf; one pod of 64 leaves. */
  CU_ASSERT(L.leaf_down == 48 && L.leaf_up == 16 && L.nodes_per_leaf == 6 && L.max_nodes == 384);
  CU_ASSERT(sim_fabric_layout_for(&f, 385, 8, 50e9, &L) == CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "holds at most 384 nodes") != NULL);
}

/* The slowdown of a ring over nodes in the given order (one job), on
 * `channels` of the nodes' `rails` NICs. */
static double ring_slowdown_on(const sim_fabric *f, int nodes, int rails, int channels, const int *order, int N) {
  sim_fabric_layout L;
  sim_fnet net;
  sim_flows fl;
  double ideal = 0, real = 0;
  if (sim_fabric_layout_for(f, nodes, rails, 50e9, &L) || sim_fnet_init(&net, f, &L))
    return -1;
  if (sim_flows_init(&fl, net.n_links) == 0 && sim_fnet_flows(&net, SIM_FNET_RING, order, N, channels, 0, &fl) == 0) {
    memcpy(fl.cap, net.cap_real, sizeof *fl.cap * (size_t)net.n_links);
    sim_flows_min_share(&fl, net.n_nic_links, &ideal);
    sim_flows_min_share(&fl, -1, &real);
  }
  sim_flows_free(&fl);
  sim_fnet_free(&net);
  return ideal / real;
}

static double ring_slowdown(const sim_fabric *f, int nodes, int rails, const int *order, int N) {
  return ring_slowdown_on(f, nodes, rails, rails, order, N);
}

/* Rack order: a ring leaves a leaf once (per rail), however oversubscribed.
 * Every hop leaving its leaf: each leaf's nodes all send up, and the leaf's
 * uplinks, 1/o of its node ports, give each flow 1/o of a NIC: the
 * slowdown is o exactly; background b on them leaves 1 - b. */
static void test_ring_closed_form(void) {
  for (int rail = 0; rail < 2; rail++)
    for (int k = 0; k < 3; k++) {
      double o = k == 0 ? 1.0 : k == 1 ? 3.0 : 7.0;
      sim_fabric f = clos(2, 64, o, rail);
      sim_fabric_layout L;
      CU_ASSERT_FATAL(sim_fabric_layout_for(&f, 1, 8, 50e9, &L) == 0);
      /* Four full groups of nodes that share a leaf (a rack when
       * rail-optimized), in stride: node q of each group, then q + 1. */
      int per = L.nodes_per_leaf, N = 4 * per, *order = malloc(sizeof *order * (size_t)N),
          *rack = malloc(sizeof *rack * (size_t)N), n = 0;
      for (int q = 0; q < per; q++)
        for (int g = 0; g < 4; g++)
          order[n++] = g * per + q;
      for (int i = 0; i < N; i++)
        rack[i] = i;
      CU_ASSERT(near(ring_slowdown(&f, N, 8, rack, N), 1.0, 1e-12));
      CU_ASSERT(near(ring_slowdown(&f, N, 8, order, N), o, 1e-12));
      /* Gloo's one ring a node, on NIC 0: an eighth of the flows leave each
       * leaf (rail-optimized, its NIC 0 leaf alone). */
      CU_ASSERT(near(ring_slowdown_on(&f, N, 8, 1, order, N), rail ? o : fmax(1.0, o / 8), 1e-12));
      f.tier[SIM_TIER_LEAF].background = 0.5;
      CU_ASSERT(near(ring_slowdown(&f, N, 8, order, N), 2.0 * o, 1e-12));
      free(order);
      free(rack);
    }
}

/* --- whole points ----------------------------------------------------------- */

static const char head[] =
    "profile = \"" DDPSIM_SOURCE_DIR "/scenarios/profiles/dgx-h100.cfg\";\n"
    "model = \"" DDPSIM_SOURCE_DIR "/scenarios/models/resnet50.cfg\";\n"
    "training = { batch = 32; precision = \"amp_bf16\"; };\n"
    "networks = ( { name = \"IB\"; gbps = 400.0; latency_us = 14.0; nics_per_node = 8; efficiency = 0.96; } );\n"
    "simulation = { steps = 2; };\n";

static int predict(const char *body, long point, sim_point_result *r) {
  char text[8192];
  snprintf(text, sizeof text, "%s%s", head, body);
  sim_scenario *s = tu_load_string(text, "/tmp/fabric-test.cfg");
  if (!s)
    return -1;
  int rc = tu_run_point(s, point, r);
  sim_scenario_free(s);
  return rc;
}

/* On a non-blocking fabric the flows get their NICs: every algorithm's time
 * is the single-link model's, to the bit. */
static void test_one_to_one_is_single_link(void) {
  static const char *const algos[] = {"ring", "tree", "hierarchical", "auto"};
  for (int a = 0; a < 4; a++)
    for (int nodes = 2; nodes <= 512; nodes *= 4) {
      char plain[512], fab[1024];
      snprintf(plain, sizeof plain,
          "cluster = { nodes = %d; devices_per_node = 8; };\nddp = { algorithm = \"%s\"; };\n", nodes, algos[a]);
      snprintf(fab, sizeof fab,
          "%sfabric = { leaf = { ports = 64; }; spine = { ports = 64; }; core = { ports = 64; }; rail_optimized = %s; "
          "rank_order = \"%s\"; };\n",
          plain, nodes % 8 ? "true" : "false", nodes > 8 ? "random" : "rack");
      sim_point_result x, y;
      CU_ASSERT_FATAL(predict(plain, 0, &x) == 0 && predict(fab, 0, &y) == 0);
      CU_ASSERT(x.comm_s == y.comm_s && x.step_s == y.step_s);
      CU_ASSERT(y.has_fabric && y.fab.slowdown == 1.0);
    }
}

/* 3:1 leaves and ranks in random order: the tree's flows leave their
 * leaves, and the collectives take longer than on 1:1. */
static void test_oversubscribed_slower(void) {
  const char *body = "cluster = { nodes = 512; devices_per_node = 8; };\nddp = { algorithm = \"tree\"; };\n"
                     "fabric = ( { name = \"a\"; leaf = { ports = 64; }; spine = { ports = 64; }; core = { ports = 64; "
                     "}; rank_order = \"random\"; },\n"
                     "           { name = \"b\"; leaf = { ports = 64; oversubscription = 3.0; }; spine = { ports = 64; "
                     "}; core = { ports = 64; }; rank_order = \"random\"; } );\n";
  sim_point_result one, three;
  CU_ASSERT_FATAL(predict(body, 0, &one) == 0 && predict(body, 1, &three) == 0);
  CU_ASSERT(one.fab.slowdown == 1.0 && three.fab.slowdown > 1.5);
  CU_ASSERT(three.comm_s > one.comm_s);
  CU_ASSERT_EQUAL(three.fab.used_algo, SIM_ALGO_TREE);
}

/* SHARP: on many nodes NCCL's choice is the switches' reduction, whose bus
 * bandwidth is above the ring's and the tree's; NVLS on one node beats the
 * ring over NVLink. */
static void test_in_network(void) {
  const char *body =
      "cluster = { nodes = [1, 256]; devices_per_node = 8; };\n"
      "fabric = ( { name = \"plain\"; leaf = { ports = 64; }; spine = { ports = 64; }; core = { ports = 64; }; },\n"
      "           { name = \"sharp\"; leaf = { ports = 64; }; spine = { ports = 64; }; core = { ports = 64; };\n"
      "             intra = \"nvswitch\"; in_network = [\"sharp\", \"nvls\"]; } );\n";
  sim_point_result plain1, plain256, sharp1, sharp256;
  CU_ASSERT_FATAL(predict(body, 0, &plain1) == 0 && predict(body, 1, &plain256) == 0);
  CU_ASSERT_FATAL(predict(body, 2, &sharp1) == 0 && predict(body, 3, &sharp256) == 0);
  CU_ASSERT_EQUAL(sharp1.fab.used_algo, SIM_ALGO_NVLS);
  CU_ASSERT(sharp256.fab.used_algo == SIM_ALGO_COLLNET || sharp256.fab.used_algo == SIM_ALGO_NVLS);
  CU_ASSERT(sharp1.fab.busbw_GBps > plain1.fab.busbw_GBps);
  CU_ASSERT(sharp256.fab.busbw_GBps > 1.5 * plain256.fab.busbw_GBps);
  CU_ASSERT(sharp256.comm_s < plain256.comm_s);
}

/* A neighbour on the same 3:1 leaves, ranks in random order: the job's
 * collectives slow down against the same neighbour without traffic, and
 * the same seed gives the same bytes. */
static void test_neighbour(void) {
#define NEIGHBOUR_FMT                                                                                                  \
  "cluster = { nodes = 256; devices_per_node = 8; };\nddp = { algorithm = \"tree\"; };\n"                              \
  "fabric = { leaf = { ports = 64; oversubscription = 3.0; }; spine = { ports = 64; }; core = { ports = 64; };\n"      \
  "           placement = \"interleaved\"; rank_order = \"random\"; %s };\n"
#define NEIGHBOUR(traffic)                                                                                             \
  "neighbours = ( { name = \"n\"; model = \"" DDPSIM_SOURCE_DIR "/scenarios/models/bert-large.cfg\"; nodes = 256; "    \
  "batch = 8; traffic = " traffic "; } );"
  char alone[2048], with[2048];
  snprintf(alone, sizeof alone, NEIGHBOUR_FMT, NEIGHBOUR("false"));
  snprintf(with, sizeof with, NEIGHBOUR_FMT, NEIGHBOUR("true"));
  sim_point_result a, b, c;
  CU_ASSERT_FATAL(predict(alone, 0, &a) == 0 && predict(with, 0, &b) == 0 && predict(with, 0, &c) == 0);
  CU_ASSERT(b.fab.slowdown > a.fab.slowdown);
  CU_ASSERT(b.comm_s > a.comm_s);
  CU_ASSERT(b.fab.other_gpus == 2048 && a.fab.other_gpus == 2048);
  CU_ASSERT(b.fab.duty > 0 && b.fab.duty < 1);
  CU_ASSERT(memcmp(&b.fab, &c.fab, sizeof b.fab) == 0 && b.step_s == c.step_s);
}

/* Points of one world on fabrics alike draw the same random placement
 * (common random numbers): two fabrics that differ only in their names give
 * the same slowdown. */
static void test_same_world_same_placement(void) {
#define TWIN_FABRIC(name)                                                                                              \
  "{ name = \"" name "\"; leaf = { ports = 64; oversubscription = 3.0; }; spine = { ports = 64; }; "                   \
  "core = { ports = 64; }; placement = \"random\"; rank_order = \"random\"; neighbours = ( { name = \"n\"; model = "   \
  "\"" DDPSIM_SOURCE_DIR "/scenarios/models/bert-large.cfg\"; nodes = 256; batch = 8; } ); }"
  const char *body = "cluster = { nodes = 256; devices_per_node = 8; };\nddp = { algorithm = \"tree\"; };\n"
                     "fabric = ( " TWIN_FABRIC("a") ",\n" TWIN_FABRIC("b") " );\n";
  sim_point_result a, b;
  CU_ASSERT_FATAL(predict(body, 0, &a) == 0 && predict(body, 1, &b) == 0);
  CU_ASSERT(a.fab.slowdown > 1.0);
  CU_ASSERT(a.fab.slowdown == b.fab.slowdown && a.comm_s == b.comm_s && a.step_s == b.step_s);
}

/* Random placement: the seed decides where, and only the seed. */
static void test_placement_seed(void) {
  sim_fabric f = clos(2, 64, 1.0, 0);
  f.placement = SIM_PLACE_RANDOM;
  int sizes[2] = {40, 24}, *a[2] = {0}, *b[2] = {0}, *c[2] = {0};
  CU_ASSERT_FATAL(sim_fnet_place(&f, sizes, 2, 7, a) == 0 && sim_fnet_place(&f, sizes, 2, 7, b) == 0 &&
                  sim_fnet_place(&f, sizes, 2, 8, c) == 0);
  CU_ASSERT(memcmp(a[0], b[0], sizeof(int) * 40) == 0 && memcmp(a[0], c[0], sizeof(int) * 40) != 0);
  int seen[64] = {0}, dup = 0;
  for (int j = 0; j < 2; j++)
    for (int i = 0; i < sizes[j]; i++)
      dup += seen[a[j][i]]++ > 0;
  CU_ASSERT_EQUAL(dup, 0);
  for (int j = 0; j < 2; j++) {
    free(a[j]);
    free(b[j]);
    free(c[j]);
  }
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("fabric", NULL, NULL);
  CU_add_test(s, "max-min: a worked example", test_maxmin_example);
  CU_add_test(s, "one world, fabrics alike: the same placement", test_same_world_same_placement);
  CU_add_test(s, "max-min: definition, counted share, owner's slowest", test_maxmin_random);
  CU_add_test(s, "layout: racks, pods, capacity", test_layout);
  CU_add_test(s, "ring: rack order free, every hop out slowed by o", test_ring_closed_form);
  CU_add_test(s, "1:1 fabric gives the single-link times", test_one_to_one_is_single_link);
  CU_add_test(s, "3:1 and random ranks slow the tree", test_oversubscribed_slower);
  CU_add_test(s, "SHARP and NVLS", test_in_network);
  CU_add_test(s, "a neighbour job", test_neighbour);
  CU_add_test(s, "placement by seed", test_placement_seed);
}
