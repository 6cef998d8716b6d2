/*
 * flows — flows on links of given capacity and their max-min fair rates,
 * by progressive filling (Bertsekas and Gallager, "Data Networks", 2nd ed.
 * 1992, sec. 6.5.2): every flow's rate rises at the same pace until a link
 * it crosses is full; there its flows stop, the link's other flows go on.
 * What comes out is the max-min fair allocation: no flow can go faster
 * without slowing one that is no faster than it. A flow belongs to an owner
 * (a job); the slowest flow of an owner is found by stopping at the first
 * of its flows to stop, which is the least it gets.
 */
#ifndef SIM_FLOWS_H
#define SIM_FLOWS_H

typedef struct sim_flows {
  int n_links;
  double *cap; /* [n_links] bytes per second */
  int n_flows, flows_cap;
  int *start; /* [n_flows + 1] each flow's links in path[] */
  int *path;
  long n_path, path_cap;
  int *owner; /* [n_flows] */
} sim_flows;

/* n_links links of capacity 0 (set cap[] after). */
int sim_flows_init(sim_flows *f, int n_links);
void sim_flows_free(sim_flows *f);
/* Forget the flows, keep the links and their capacities. */
void sim_flows_clear(sim_flows *f);
/* A flow over links[0..n-1] (no link twice). */
int sim_flows_add(sim_flows *f, const int *links, int n, int owner);

/* Max-min fair rate of every flow, into rate[n_flows]. A flow crossing no
 * link gets INFINITY. */
int sim_flows_maxmin(const sim_flows *f, double *rate);
/* The smallest max-min fair rate among the flows of owner (INFINITY when
 * it has none, or they cross no link). */
int sim_flows_min_rate(const sim_flows *f, int owner, double *out);
/* The smallest max-min fair rate of all flows: the smallest share a link
 * gives its flows, capacity over flows, where progressive filling stops
 * first. Counting alone, no filling; only links whose index is below
 * `links` count (the first links, e.g. the NICs, as if the rest were
 * unbounded), all of them with links < 0. INFINITY without flows. */
int sim_flows_min_share(const sim_flows *f, int links, double *out);

#endif
