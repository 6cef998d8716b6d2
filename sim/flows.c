#include "flows.h"

#include "core/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int sim_flows_init(sim_flows *f, int n_links) {
  memset(f, 0, sizeof *f);
  f->n_links = n_links;
  f->cap = calloc((size_t)(n_links > 0 ? n_links : 1), sizeof *f->cap);
  f->start = malloc(sizeof *f->start);
  if (!f->cap || !f->start) {
    sim_flows_free(f);
    return core_err_set(CORE_ENOMEM, "out of memory for %d links", n_links);
  }
  f->start[0] = 0;
  return 0;
}

void sim_flows_free(sim_flows *f) {
  free(f->cap);
  free(f->start);
  free(f->path);
  free(f->owner);
  memset(f, 0, sizeof *f);
}

void sim_flows_clear(sim_flows *f) {
  f->n_flows = 0;
  f->n_path = 0;
  f->start[0] = 0;
}

int sim_flows_add(sim_flows *f, const int *links, int n, int owner) {
  if (f->n_flows == f->flows_cap) {
    int nc = f->flows_cap ? 2 * f->flows_cap : 1024;
    int *s = realloc(f->start, sizeof *s * ((size_t)nc + 1));
    if (!s)
      return core_err_set(CORE_ENOMEM, "out of memory for %d flows", nc);
    f->start = s;
    int *o = realloc(f->owner, sizeof *o * (size_t)nc);
    if (!o)
      return core_err_set(CORE_ENOMEM, "out of memory for %d flows", nc);
    f->owner = o;
    f->flows_cap = nc;
  }
  if (f->n_path + n > f->path_cap) {
    long nc = f->path_cap ? 2 * f->path_cap : 4096;
    while (nc < f->n_path + n)
      nc *= 2;
    int *p = realloc(f->path, sizeof *p * (size_t)nc);
    if (!p)
      return core_err_set(CORE_ENOMEM, "out of memory for the flows' paths (%ld links)", nc);
    f->path = p;
    f->path_cap = nc;
  }
  memcpy(f->path + f->n_path, links, sizeof *links * (size_t)n);
  f->n_path += n;
  f->owner[f->n_flows++] = owner;
  f->start[f->n_flows] = (int)f->n_path;
  return 0;
}

/* A link's fair share in a binary min-heap, ordered by (share, link) so
 * that equal shares come out in link order: the result does not depend on
 * the heap's history. Entries go stale when the share changes. */
typedef struct entry {
  double share;
  int link;
} entry;

typedef struct heap {
  entry *e;
  long n, cap;
} heap;

static int entry_less(entry a, entry b) { return a.share < b.share || (a.share == b.share && a.link < b.link); }

static int heap_push(heap *h, entry x) {
  if (h->n == h->cap) {
    long nc = h->cap ? 2 * h->cap : 1024;
    entry *e = realloc(h->e, sizeof *e * (size_t)nc);
    if (!e)
      return core_err_set(CORE_ENOMEM, "out of memory for %ld link shares", nc);
    h->e = e;
    h->cap = nc;
  }
  long i = h->n++;
  while (i > 0 && entry_less(x, h->e[(i - 1) / 2])) {
    h->e[i] = h->e[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->e[i] = x;
  return 0;
}

static entry heap_pop(heap *h) {
  entry top = h->e[0], last = h->e[--h->n];
  long i = 0;
  for (;;) {
    long c = 2 * i + 1;
    if (c >= h->n)
      break;
    if (c + 1 < h->n && entry_less(h->e[c + 1], h->e[c]))
      c++;
    if (!entry_less(h->e[c], last))
      break;
    h->e[i] = h->e[c];
    i = c;
  }
  if (h->n)
    h->e[i] = last;
  return top;
}

/* Progressive filling. With owner >= 0 it stops at the first flow of that
 * owner to stop, its rate in *first (INFINITY if none). */
typedef struct filling {
  const sim_flows *f;
  int *lstart, *lflows; /* flows of each link (CSR) */
  double *rem;          /* capacity left */
  int *cnt;             /* flows still rising */
  char *done;
  heap h;
} filling;

static void filling_free(filling *g) {
  free(g->lstart);
  free(g->lflows);
  free(g->rem);
  free(g->cnt);
  free(g->done);
  free(g->h.e);
}

static int filling_init(filling *g, const sim_flows *f) {
  int L = f->n_links;
  memset(g, 0, sizeof *g);
  g->f = f;
  g->lstart = calloc((size_t)L + 1, sizeof *g->lstart);
  g->lflows = malloc(sizeof *g->lflows * (size_t)(f->n_path ? f->n_path : 1));
  g->rem = malloc(sizeof *g->rem * (size_t)(L ? L : 1));
  g->cnt = calloc((size_t)(L ? L : 1), sizeof *g->cnt);
  g->done = calloc((size_t)(f->n_flows ? f->n_flows : 1), 1);
  if (!g->lstart || !g->lflows || !g->rem || !g->cnt || !g->done)
    return core_err_set(CORE_ENOMEM, "out of memory sharing %d links among %d flows", L, f->n_flows);
  for (long k = 0; k < f->n_path; k++)
    g->cnt[f->path[k]]++;
  for (int l = 0; l < L; l++)
    g->lstart[l + 1] = g->lstart[l] + g->cnt[l];
  int *fill = malloc(sizeof *fill * (size_t)(L ? L : 1));
  if (!fill)
    return core_err_set(CORE_ENOMEM, "out of memory sharing %d links", L);
  memcpy(fill, g->lstart, sizeof *fill * (size_t)L);
  for (int i = 0; i < f->n_flows; i++)
    for (int k = f->start[i]; k < f->start[i + 1]; k++)
      g->lflows[fill[f->path[k]]++] = i;
  free(fill);
  int rc = 0;
  for (int l = 0; l < L && !rc; l++) {
    g->rem[l] = f->cap[l];
    if (g->cnt[l])
      rc = heap_push(&g->h, (entry){f->cap[l] / g->cnt[l], l});
  }
  return rc;
}

/* Stop flow i at rate r: its links lose r of capacity and a rising flow. */
static int stop_flow(filling *g, int i, double r, double *rate) {
  const sim_flows *f = g->f;
  g->done[i] = 1;
  if (rate)
    rate[i] = r;
  for (int k = f->start[i]; k < f->start[i + 1]; k++) {
    int l = f->path[k];
    g->rem[l] = g->rem[l] > r ? g->rem[l] - r : 0;
    if (--g->cnt[l] > 0) {
      int rc = heap_push(&g->h, (entry){g->rem[l] / g->cnt[l], l});
      if (rc)
        return rc;
    }
  }
  return 0;
}

static int fill(filling *g, double *rate, int owner, double *first) {
  const sim_flows *f = g->f;
  *first = INFINITY;
  while (g->h.n) {
    entry x = heap_pop(&g->h);
    int l = x.link;
    if (!g->cnt[l] || x.share != g->rem[l] / g->cnt[l])
      continue; /* stale */
    double r = x.share;
    for (int k = g->lstart[l]; k < g->lstart[l + 1]; k++) {
      int i = g->lflows[k];
      if (g->done[i])
        continue;
      if (owner >= 0 && f->owner[i] == owner) {
        *first = r;
        return 0;
      }
      int rc = stop_flow(g, i, r, rate);
      if (rc)
        return rc;
    }
  }
  return 0;
}

int sim_flows_maxmin(const sim_flows *f, double *rate) {
  filling g;
  double first;
  int rc = filling_init(&g, f);
  if (!rc)
    rc = fill(&g, rate, -1, &first);
  for (int i = 0; !rc && i < f->n_flows; i++)
    if (!g.done[i])
      rate[i] = INFINITY;
  filling_free(&g);
  return rc;
}

int sim_flows_min_rate(const sim_flows *f, int owner, double *out) {
  filling g;
  int rc = filling_init(&g, f);
  if (!rc)
    rc = fill(&g, NULL, owner, out);
  filling_free(&g);
  return rc;
}

int sim_flows_min_share(const sim_flows *f, int links, double *out) {
  int L = links < 0 || links > f->n_links ? f->n_links : links;
  int *cnt = calloc((size_t)(L ? L : 1), sizeof *cnt);
  if (!cnt)
    return core_err_set(CORE_ENOMEM, "out of memory counting flows on %d links", L);
  for (long k = 0; k < f->n_path; k++)
    if (f->path[k] < L)
      cnt[f->path[k]]++;
  double m = INFINITY;
  for (int l = 0; l < L; l++)
    if (cnt[l] && f->cap[l] / cnt[l] < m)
      m = f->cap[l] / cnt[l];
  free(cnt);
  *out = m;
  return 0;
}
