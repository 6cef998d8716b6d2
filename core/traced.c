#include "traced.h"

#include "cfg.h"
#include "err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {"other", "fwd", "bwd", "grad", "finalize", NULL};
static const char *const traced_keys[] = {"device", "device_memory_GB", "host_devices", "backend", "world_size", "rank",
    "ddp", "steps", "step_ms", "step_min_ms", "step_max_ms", "overlap_slowdown", "launch_host_us", "streams",
    "precision", "peak_tflops", "peak_memory_GBps", "roofs_from", "pieces", "side", "syncs", "waits", "buckets", NULL};
static const char *const piece_keys[] = {"kind", "layer", "tensor", "label", "host_us", "dev_us", "copy_host_us",
    "copy_dev_us", "dev_compute_us", "dev_memory_us", "dev_launch_us", NULL};
static const char *const class_keys[] = {"dev_compute_us", "dev_memory_us", "dev_launch_us"};
static const char *const side_keys[] = {"piece", "at", "stream", "us", "nccl", "dep", "held", NULL};
static const char *const sync_keys[] = {"piece", "at", "streams", NULL};
static const char *const wait_keys[] = {"piece", "stream", NULL};
static const char *const bucket_keys[] = {"bytes", "us", "min_us", NULL};

/* Side streams are bits of a 64-bit mask, bit 0 the compute stream. */
enum { MAX_STREAMS = 63, MAX_ITEMS = 10000000 };
#define MAX_US 1e12

static const char *piece_kind_name(enum core_piece_kind k) { return k >= 0 && k < CORE_PIECE_N ? kind_names[k] : "?"; }

void core_traced_free(core_traced *t) {
  if (!t)
    return;
  free(t->pieces);
  free(t->side);
  free(t->syncs);
  free(t->bucket_bytes);
  free(t->bucket_s);
  free(t->bucket_min_s);
  free(t);
}

/* ---- reading ------------------------------------------------------------------ */

/* dev_compute_us, dev_memory_us, dev_launch_us: all or none, adding up to dev_us. */
static int parse_classes(const config_setting_t *g, double dev, core_piece *p) {
  char w[4200];
  int n = 0, rc;
  double sum = 0;
  for (int k = 0; k < 3; k++) {
    n += config_setting_get_member(g, class_keys[k]) != NULL;
    if ((rc = core_cfg_double(g, class_keys[k], 0, 0, 0, MAX_US, &p->dev_class_s[k])) != 0)
      return rc;
    sum += p->dev_class_s[k];
    p->dev_class_s[k] *= 1e-6;
  }
  if (n != 0 && n != 3)
    return core_err_set(CORE_EINVAL,
        "%s: a piece gives %d of dev_compute_us, dev_memory_us and dev_launch_us; give all three or none",
        core_cfg_where(g, w, sizeof w), n);
  if (n == 3 && !(sum <= dev * (1 + 1e-9) + 1e-9 && sum >= dev * (1 - 1e-9) - 1e-9))
    return core_err_set(CORE_EINVAL,
        "%s: dev_compute_us + dev_memory_us + dev_launch_us = %.17g, but dev_us = %.17g; they split the piece's device "
        "time and must add up to it",
        core_cfg_where(g, w, sizeof w), sum, dev);
  p->classed = n == 3;
  return 0;
}

static int parse_piece(const config_setting_t *g, int n_layers, int n_tensors, core_piece *p) {
  const char *kind, *label;
  long long idx;
  double host, dev, ch, cd;
  int rc;
  memset(p, 0, sizeof *p);
  p->index = -1;
  if ((rc = core_cfg_check_keys(g, piece_keys, "a traced piece")) != 0 ||
      (rc = core_cfg_string(g, "kind", 1, NULL, kind_names, &kind)) != 0)
    return rc;
  for (int k = 0; kind_names[k]; k++)
    if (!strcmp(kind, kind_names[k]))
      p->kind = (enum core_piece_kind)k;
  const char *ikey = p->kind == CORE_PIECE_FWD || p->kind == CORE_PIECE_BWD ? "layer"
                     : p->kind == CORE_PIECE_GRAD                           ? "tensor"
                                                                            : NULL;
  int limit = p->kind == CORE_PIECE_GRAD ? n_tensors : n_layers;
  if (ikey && (rc = core_cfg_int(g, ikey, 1, 0, 0, limit - 1, &idx)) != 0)
    return rc;
  if (ikey)
    p->index = (int)idx;
  if ((rc = core_cfg_string(g, "label", 0, "", NULL, &label)) != 0 ||
      (rc = core_cfg_double(g, "host_us", 1, 0, 0, MAX_US, &host)) != 0 ||
      (rc = core_cfg_double(g, "dev_us", 1, 0, 0, MAX_US, &dev)) != 0 ||
      (rc = core_cfg_double(g, "copy_host_us", 0, 0, 0, host, &ch)) != 0 ||
      (rc = core_cfg_double(g, "copy_dev_us", 0, 0, 0, dev, &cd)) != 0)
    return rc;
  snprintf(p->label, sizeof p->label, "%s", label);
  p->host_s = host * 1e-6;
  p->dev_s = dev * 1e-6;
  p->copy_host_s = ch * 1e-6;
  p->copy_dev_s = cd * 1e-6;
  return parse_classes(g, dev, p);
}

/* The list of groups under key (empty or missing: n = 0), its elements
 * allocated as n items of item_size. */
static int open_list(const config_setting_t *parent, const char *key, size_t item_size, const config_setting_t **l,
    void **items, int *n) {
  int rc = core_cfg_list_or_empty(parent, key, 0, l);
  *n = 0;
  *items = NULL;
  if (rc || !*l)
    return rc;
  int len = config_setting_length(*l);
  if (len > MAX_ITEMS) {
    char w[4200];
    return core_err_set(
        CORE_EINVAL, "%s: more than %d entries in '%s'", core_cfg_where(*l, w, sizeof w), MAX_ITEMS, key);
  }
  if (len > 0 && !(*items = calloc((size_t)len, item_size)))
    return core_err_set(CORE_ENOMEM, "out of memory reading '%s'", key);
  *n = len;
  return 0;
}

/* The piece an entry refers to, and its share `at` (when at is not NULL);
 * entries come in piece order, so each piece's form one run. */
static int piece_ref(const config_setting_t *g, const core_traced *t, int prev, int *piece, double *at) {
  long long p;
  int rc = core_cfg_int(g, "piece", 1, 0, 0, t->n_pieces - 1, &p);
  if (rc == 0 && at)
    rc = core_cfg_double(g, "at", 1, 0, 0, 1, at);
  if (rc == 0 && p < prev) {
    char w[4200];
    rc = core_err_set(CORE_EINVAL, "%s: entries must come in piece order (piece %lld after piece %d)",
        core_cfg_where(g, w, sizeof w), p, prev);
  }
  *piece = (int)p;
  return rc;
}

static int parse_side(const config_setting_t *g, core_traced *t, int i, int *prev) {
  core_side *s = &t->side[i];
  long long st, dep;
  int piece, rc;
  if ((rc = core_cfg_check_keys(g, side_keys, "a traced side entry")) != 0 ||
      (rc = piece_ref(g, t, *prev, &piece, &s->at)) != 0 ||
      (rc = core_cfg_int(g, "stream", 1, 0, 1, t->streams, &st)) != 0 ||
      (rc = core_cfg_double(g, "us", 1, 0, 0, MAX_US, &s->dur_s)) != 0 ||
      (rc = core_cfg_int(g, "dep", 0, -1, -1, t->streams, &dep)) != 0 ||
      (rc = core_cfg_bool(g, "nccl", 0, 0, &s->nccl)) != 0 || (rc = core_cfg_bool(g, "held", 0, 0, &s->held)) != 0)
    return rc;
  s->stream = (int)st;
  s->dep = (int)dep;
  s->dur_s *= 1e-6;
  core_piece *p = &t->pieces[piece];
  if (!p->n_side++)
    p->first_side = i;
  *prev = piece;
  return 0;
}

static int parse_sync(const config_setting_t *g, core_traced *t, int i, int *prev) {
  core_sync *s = &t->syncs[i];
  long long *streams;
  int piece, n, rc;
  if ((rc = core_cfg_check_keys(g, sync_keys, "a traced sync")) != 0 ||
      (rc = piece_ref(g, t, *prev, &piece, &s->at)) != 0 ||
      (rc = core_cfg_int_list(g, "streams", 1, 0, 0, t->streams, &streams, &n)) != 0)
    return rc;
  for (int k = 0; k < n; k++)
    s->streams |= 1ull << streams[k];
  free(streams);
  core_piece *p = &t->pieces[piece];
  if (!p->n_sync++)
    p->first_sync = i;
  *prev = piece;
  return 0;
}

static int parse_pieces(const config_setting_t *g, core_traced *t, int n_layers, int n_tensors) {
  const config_setting_t *l;
  int rc = open_list(g, "pieces", sizeof *t->pieces, &l, (void **)&t->pieces, &t->n_pieces);
  if (rc)
    return rc;
  if (t->n_pieces == 0) {
    char w[4200];
    return core_err_set(
        CORE_EINVAL, "%s: a traced step needs its pieces (traced.pieces)", core_cfg_where(g, w, sizeof w));
  }
  t->classed = 1;
  for (int i = 0; i < t->n_pieces; i++) {
    if ((rc = parse_piece(config_setting_get_elem(l, (unsigned)i), n_layers, n_tensors, &t->pieces[i])) != 0)
      return rc;
    t->classed &= t->pieces[i].classed;
  }
  return 0;
}

static int parse_extras(const config_setting_t *g, core_traced *t) {
  const config_setting_t *l;
  int rc, prev = 0, n_waits;
  void *unused;
  if ((rc = open_list(g, "side", sizeof *t->side, &l, (void **)&t->side, &t->n_side)) != 0)
    return rc;
  for (int i = 0; i < t->n_side; i++)
    if ((rc = parse_side(config_setting_get_elem(l, (unsigned)i), t, i, &prev)) != 0)
      return rc;
  prev = 0;
  if ((rc = open_list(g, "syncs", sizeof *t->syncs, &l, (void **)&t->syncs, &t->n_syncs)) != 0)
    return rc;
  for (int i = 0; i < t->n_syncs; i++)
    if ((rc = parse_sync(config_setting_get_elem(l, (unsigned)i), t, i, &prev)) != 0)
      return rc;
  if ((rc = open_list(g, "waits", 1, &l, &unused, &n_waits)) != 0)
    return rc;
  free(unused);
  for (int i = 0; i < n_waits; i++) {
    const config_setting_t *w = config_setting_get_elem(l, (unsigned)i);
    long long st;
    int piece;
    if ((rc = core_cfg_check_keys(w, wait_keys, "a traced wait")) != 0 ||
        (rc = piece_ref(w, t, 0, &piece, NULL)) != 0 || (rc = core_cfg_int(w, "stream", 1, 0, 1, t->streams, &st)) != 0)
      return rc;
    t->pieces[piece].waits |= 1ull << st;
  }
  return 0;
}

static int parse_buckets(const config_setting_t *g, core_traced *t) {
  const config_setting_t *l;
  void *items;
  int rc = open_list(g, "buckets", 1, &l, &items, &t->n_buckets);
  free(items);
  if (rc || t->n_buckets == 0)
    return rc;
  t->bucket_bytes = calloc((size_t)t->n_buckets, sizeof *t->bucket_bytes);
  t->bucket_s = calloc((size_t)t->n_buckets, sizeof *t->bucket_s);
  t->bucket_min_s = calloc((size_t)t->n_buckets, sizeof *t->bucket_min_s);
  if (!t->bucket_bytes || !t->bucket_s || !t->bucket_min_s)
    return core_err_set(CORE_ENOMEM, "out of memory reading traced buckets");
  for (int i = 0; i < t->n_buckets; i++) {
    const config_setting_t *b = config_setting_get_elem(l, (unsigned)i);
    if ((rc = core_cfg_check_keys(b, bucket_keys, "a traced bucket")) != 0 ||
        (rc = core_cfg_double(b, "bytes", 0, 0, 1, 1e15, &t->bucket_bytes[i])) != 0 ||
        (rc = core_cfg_double(b, "us", 1, 0, 0, MAX_US, &t->bucket_s[i])) != 0 ||
        (rc = core_cfg_double(b, "min_us", 0, t->bucket_s[i], 0, t->bucket_s[i], &t->bucket_min_s[i])) != 0)
      return rc;
    t->bucket_s[i] *= 1e-6;
    t->bucket_min_s[i] *= 1e-6;
  }
  return 0;
}

/* precision, peak_tflops, peak_memory_GBps, roofs_from. */
static int parse_roofs(const config_setting_t *g, core_traced *t) {
  const char *prec, *from;
  double tf, mem;
  int rc;
  if ((rc = core_cfg_string(g, "precision", 0, "fp32", core_prec_names, &prec)) != 0 ||
      (rc = core_cfg_double(g, "peak_tflops", 0, 0, 0, 1e9, &tf)) != 0 ||
      (rc = core_cfg_double(g, "peak_memory_GBps", 0, 0, 0, 1e9, &mem)) != 0 ||
      (rc = core_cfg_string(g, "roofs_from", 0, "", NULL, &from)) != 0)
    return rc;
  core_prec_parse(prec, &t->precision);
  t->peak_flops = tf * 1e12;
  t->peak_memory_Bps = mem * 1e9;
  snprintf(t->roofs_from, sizeof t->roofs_from, "%s", from);
  return 0;
}

static int parse_header(const config_setting_t *g, core_traced *t) {
  const char *device, *backend;
  long long world, rank, steps, streams, hostdev;
  double step, lo, hi, launch;
  int rc;
  if ((rc = core_cfg_check_keys(g, traced_keys, "traced")) != 0 ||
      (rc = core_cfg_string(g, "device", 0, "", NULL, &device)) != 0 ||
      (rc = core_cfg_string(g, "backend", 0, "nccl", NULL, &backend)) != 0 ||
      (rc = core_cfg_double(g, "device_memory_GB", 0, 0, 0, 1e6, &t->device_memory_GB)) != 0 ||
      (rc = core_cfg_int(g, "host_devices", 0, 0, 0, 1 << 16, &hostdev)) != 0 ||
      (rc = core_cfg_int(g, "world_size", 1, 0, 1, 1 << 24, &world)) != 0 ||
      (rc = core_cfg_int(g, "rank", 0, 0, 0, world - 1, &rank)) != 0 ||
      (rc = core_cfg_bool(g, "ddp", 0, 1, &t->ddp)) != 0 ||
      (rc = core_cfg_int(g, "steps", 0, 1, 1, 1 << 30, &steps)) != 0 ||
      (rc = core_cfg_double(g, "step_ms", 0, 0, 0, MAX_US, &step)) != 0 ||
      (rc = core_cfg_double(g, "step_min_ms", 0, step, 0, step, &lo)) != 0 ||
      (rc = core_cfg_double(g, "step_max_ms", 0, step, step, MAX_US, &hi)) != 0 ||
      (rc = core_cfg_double(g, "overlap_slowdown", 0, 1, 1, 100, &t->overlap_slowdown)) != 0 ||
      (rc = core_cfg_double(g, "launch_host_us", 0, 0, 0, MAX_US, &launch)) != 0 ||
      (rc = core_cfg_int(g, "streams", 0, 0, 0, MAX_STREAMS, &streams)) != 0)
    return rc;
  snprintf(t->device, sizeof t->device, "%s", device);
  snprintf(t->backend, sizeof t->backend, "%s", backend);
  t->world_size = (int)world;
  t->host_devices = (int)hostdev;
  t->rank = (int)rank;
  t->steps = (int)steps;
  t->step_s = step * 1e-3;
  t->step_min_s = lo * 1e-3;
  t->step_max_s = hi * 1e-3;
  t->launch_host_s = launch * 1e-6;
  t->streams = (int)streams;
  return 0;
}

int core_traced_parse(const config_setting_t *g, int n_layers, int n_tensors, core_traced **out) {
  core_traced *t = calloc(1, sizeof *t);
  int rc;
  *out = NULL;
  if (!t)
    return core_err_set(CORE_ENOMEM, "out of memory reading a traced step");
  t->line = config_setting_source_line(g);
  if ((rc = parse_header(g, t)) != 0 || (rc = parse_roofs(g, t)) != 0 ||
      (rc = parse_pieces(g, t, n_layers, n_tensors)) != 0 || (rc = parse_extras(g, t)) != 0 ||
      (rc = parse_buckets(g, t)) != 0) {
    core_traced_free(t);
    return rc;
  }
  *out = t;
  return 0;
}

/* ---- writing ------------------------------------------------------------------ */

static config_setting_t *add(config_setting_t *g, const char *key, int type) {
  return config_setting_add(g, key, type);
}
static int add_str(config_setting_t *g, const char *key, const char *v) {
  config_setting_t *s = add(g, key, CONFIG_TYPE_STRING);
  return s && config_setting_set_string(s, v) == CONFIG_TRUE ? 0 : -1;
}
static int add_int(config_setting_t *g, const char *key, long long v) {
  config_setting_t *s = add(g, key, CONFIG_TYPE_INT);
  return s && config_setting_set_int(s, (int)v) == CONFIG_TRUE ? 0 : -1;
}
static int add_num(config_setting_t *g, const char *key, double v) {
  config_setting_t *s = add(g, key, CONFIG_TYPE_FLOAT);
  return s && config_setting_set_float(s, v) == CONFIG_TRUE ? 0 : -1;
}
static int add_bool(config_setting_t *g, const char *key, int v) {
  config_setting_t *s = add(g, key, CONFIG_TYPE_BOOL);
  return s && config_setting_set_bool(s, v) == CONFIG_TRUE ? 0 : -1;
}

static int write_piece(config_setting_t *l, const core_piece *p) {
  config_setting_t *g = add(l, NULL, CONFIG_TYPE_GROUP);
  if (!g || add_str(g, "kind", piece_kind_name(p->kind)))
    return -1;
  if ((p->kind == CORE_PIECE_FWD || p->kind == CORE_PIECE_BWD) && add_int(g, "layer", p->index))
    return -1;
  if (p->kind == CORE_PIECE_GRAD && add_int(g, "tensor", p->index))
    return -1;
  if (p->label[0] && add_str(g, "label", p->label))
    return -1;
  if (add_num(g, "host_us", p->host_s * 1e6) || add_num(g, "dev_us", p->dev_s * 1e6))
    return -1;
  if (p->kind == CORE_PIECE_GRAD &&
      (add_num(g, "copy_host_us", p->copy_host_s * 1e6) || add_num(g, "copy_dev_us", p->copy_dev_s * 1e6)))
    return -1;
  for (int k = 0; k < 3 && p->classed; k++)
    if (add_num(g, class_keys[k], p->dev_class_s[k] * 1e6))
      return -1;
  return 0;
}

static int write_side(config_setting_t *l, const core_side *s, int piece) {
  config_setting_t *g = add(l, NULL, CONFIG_TYPE_GROUP);
  return !g || add_int(g, "piece", piece) || add_num(g, "at", s->at) || add_int(g, "stream", s->stream) ||
                 add_num(g, "us", s->dur_s * 1e6) || add_bool(g, "nccl", s->nccl) || add_int(g, "dep", s->dep) ||
                 (s->held && add_bool(g, "held", 1))
             ? -1
             : 0;
}

static int write_sync(config_setting_t *l, const core_sync *s, int piece) {
  config_setting_t *g = add(l, NULL, CONFIG_TYPE_GROUP), *a;
  if (!g || add_int(g, "piece", piece) || add_num(g, "at", s->at) || !(a = add(g, "streams", CONFIG_TYPE_ARRAY)))
    return -1;
  for (int k = 0; k <= MAX_STREAMS; k++)
    if ((s->streams >> k & 1) && config_setting_set_int_elem(a, -1, k) == NULL)
      return -1;
  return 0;
}

static int write_lists(config_setting_t *g, const core_traced *t) {
  config_setting_t *pl = add(g, "pieces", CONFIG_TYPE_LIST), *sl = add(g, "side", CONFIG_TYPE_LIST);
  config_setting_t *yl = add(g, "syncs", CONFIG_TYPE_LIST), *wl = add(g, "waits", CONFIG_TYPE_LIST);
  config_setting_t *bl = add(g, "buckets", CONFIG_TYPE_LIST);
  if (!pl || !sl || !yl || !wl || !bl)
    return -1;
  for (int i = 0; i < t->n_pieces; i++) {
    const core_piece *p = &t->pieces[i];
    if (write_piece(pl, p))
      return -1;
    for (int k = 0; k < p->n_side; k++)
      if (write_side(sl, &t->side[p->first_side + k], i))
        return -1;
    for (int k = 0; k < p->n_sync; k++)
      if (write_sync(yl, &t->syncs[p->first_sync + k], i))
        return -1;
    for (int k = 1; k <= MAX_STREAMS; k++) {
      config_setting_t *w;
      if ((p->waits >> k & 1) &&
          (!(w = add(wl, NULL, CONFIG_TYPE_GROUP)) || add_int(w, "piece", i) || add_int(w, "stream", k)))
        return -1;
    }
  }
  for (int b = 0; b < t->n_buckets; b++) {
    config_setting_t *w = add(bl, NULL, CONFIG_TYPE_GROUP);
    if (!w || (t->bucket_bytes[b] > 0 && add_num(w, "bytes", t->bucket_bytes[b])) ||
        add_num(w, "us", t->bucket_s[b] * 1e6) || (t->bucket_min_s && add_num(w, "min_us", t->bucket_min_s[b] * 1e6)))
      return -1;
  }
  return 0;
}

int core_traced_write(const core_traced *t, config_setting_t *parent) {
  config_setting_t *g = add(parent, "traced", CONFIG_TYPE_GROUP);
  if (!g || add_str(g, "device", t->device) || add_num(g, "device_memory_GB", t->device_memory_GB) ||
      add_int(g, "host_devices", t->host_devices) || add_str(g, "backend", t->backend) ||
      add_int(g, "world_size", t->world_size) || add_int(g, "rank", t->rank) || add_bool(g, "ddp", t->ddp) ||
      add_int(g, "steps", t->steps) || add_num(g, "step_ms", t->step_s * 1e3) ||
      add_num(g, "step_min_ms", t->step_min_s * 1e3) || add_num(g, "step_max_ms", t->step_max_s * 1e3) ||
      add_num(g, "overlap_slowdown", t->overlap_slowdown) || add_num(g, "launch_host_us", t->launch_host_s * 1e6) ||
      add_int(g, "streams", t->streams) || add_str(g, "precision", core_prec_name(t->precision)) ||
      (t->peak_flops > 0 && add_num(g, "peak_tflops", t->peak_flops * 1e-12)) ||
      (t->peak_memory_Bps > 0 && add_num(g, "peak_memory_GBps", t->peak_memory_Bps * 1e-9)) ||
      (t->roofs_from[0] && add_str(g, "roofs_from", t->roofs_from)) || write_lists(g, t))
    return core_err_set(CORE_ENOMEM, "out of memory writing the traced step");
  return 0;
}
