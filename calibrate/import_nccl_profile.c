/* Assembling a profile from parsed nccl-tests runs: each run fitted into a
 * collective entry, the base profile's entries of the same collective and
 * scope replaced, its metadata rewritten (calibrate/import_nccl.h). */
#include "import_nccl.h"

#include "calibrate/fit.h"

#include "core/err.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* The fit as a profile entry (the same conversion `ddpsim calibrate` does). */
static int make_entry(const cal_nccl_run *r, core_prof_coll *c) {
  cal_fit f[CAL_FIT_MAX_REGIMES];
  int nf, rc;
  double *t = malloc(sizeof *t * (size_t)r->n);
  memset(c, 0, sizeof *c);
  if (!t)
    return core_err_set(CORE_ENOMEM, "out of memory fitting %s", r->path);
  for (int i = 0; i < r->n; i++)
    t[i] = r->time_us[i] * 1e-6;
  rc = cal_fit_alpha_beta(r->bytes, t, NULL, r->n, f, &nf);
  free(t);
  if (rc)
    return core_err_wrap(rc, "%s: fitting %s", r->path, r->binary);
  snprintf(c->backend, sizeof c->backend, "nccl");
  snprintf(c->op, sizeof c->op, "%s", r->op);
  snprintf(c->algorithm, sizeof c->algorithm, "ring");
  snprintf(c->scope, sizeof c->scope, "%s", r->nodes > 1 ? "inter" : "intra");
  c->ranks = r->ranks;
  c->nodes = r->nodes;
  c->fits = calloc((size_t)nf, sizeof *c->fits);
  c->bytes = malloc(sizeof *c->bytes * (size_t)r->n);
  c->time_us = malloc(sizeof *c->time_us * (size_t)r->n);
  if (!c->fits || !c->bytes || !c->time_us) {
    free(c->fits);
    free(c->bytes);
    free(c->time_us);
    memset(c, 0, sizeof *c);
    return core_err_set(CORE_ENOMEM, "out of memory fitting %s", r->path);
  }
  c->n_fits = nf;
  for (int i = 0; i < nf; i++)
    cal_fit_to_profile(&f[i], &c->fits[i]);
  memcpy(c->bytes, r->bytes, sizeof *c->bytes * (size_t)r->n);
  memcpy(c->time_us, r->time_us, sizeof *c->time_us * (size_t)r->n);
  c->n_points = r->n;
  return 0;
}

static void free_coll(core_prof_coll *c) {
  free(c->fits);
  free(c->bytes);
  free(c->time_us);
}

static void note(char *notes, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(char *notes, size_t n, const char *fmt, ...) {
  if (!notes || n == 0)
    return;
  size_t len = strlen(notes);
  if (len + 1 >= n)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(notes + len, n - len, fmt, ap);
  va_end(ap);
}

/* "imported from nccl-tests: a, b (+N more); ..." within the field's size. */
static void provenance(core_profile *p, const char *const *paths, int n, const char *base) {
  char tail[200];
  snprintf(tail, sizeof tail, "; algorithm assumed ring (nccl-tests does not report NCCL's choice); the rest from %.60s",
           base_name(base));
  size_t room = sizeof p->provenance - strlen(tail) - 16, len;
  len = (size_t)snprintf(p->provenance, sizeof p->provenance, "imported from nccl-tests:");
  int i = 0;
  for (; i < n; i++) {
    const char *b = base_name(paths[i]);
    if (len + strlen(b) + 2 > room)
      break;
    len += (size_t)snprintf(p->provenance + len, sizeof p->provenance - len, "%s %s", i ? "," : "", b);
  }
  if (i < n)
    len += (size_t)snprintf(p->provenance + len, sizeof p->provenance - len, " +%d more", n - i);
  snprintf(p->provenance + len, sizeof p->provenance - len, "%s", tail);
}

int cal_import_nccl(const char *const *paths, int n_paths, const cal_nccl_opts *o, core_profile **out,
                    char *notes, size_t notes_len) {
  core_profile *p = NULL;
  cal_nccl_run *runs = NULL;
  core_prof_coll *fresh = NULL;
  int rc = 0, n_fresh = 0;
  const char *kind = o->device_kind ? o->device_kind : "gpu";
  *out = NULL;
  if (notes && notes_len)
    notes[0] = '\0';
  if (n_paths < 1)
    return core_err_set(CORE_EUSAGE, "no nccl-tests output to import; give one file per collective");
  if (!o->base)
    return core_err_set(CORE_EUSAGE, "nccl-tests measures collectives only: pass --base PROFILE (e.g. scenarios/profiles/dgx-h100.cfg) for the compute rates, memory and host bandwidth the profile needs as well");
  if (strcmp(kind, "gpu") != 0 && strcmp(kind, "cpu") != 0)
    return core_err_set(CORE_EUSAGE, "--device must be gpu or cpu, not '%s'", kind);
  if ((rc = core_profile_load(o->base, &p)) != 0)
    return core_err_wrap(rc, "loading the base profile");
  runs = calloc((size_t)n_paths, sizeof *runs);
  fresh = calloc((size_t)n_paths, sizeof *fresh);
  if (!runs || !fresh) {
    rc = core_err_set(CORE_ENOMEM, "out of memory importing nccl-tests output");
    goto fail;
  }
  for (int i = 0; i < n_paths; i++) {
    if ((rc = cal_nccl_parse(paths[i], &runs[i])) != 0)
      goto fail;
    const cal_nccl_run *r = &runs[i];
    const char *scope = r->nodes > 1 ? "inter" : "intra";
    for (int j = 0; j < i; j++)
      if (!strcmp(runs[j].op, r->op) && (runs[j].nodes > 1) == (r->nodes > 1)) {
        rc = core_err_set(CORE_EINVAL, "%s: a second %s-node %s (%s already gave one); a profile keeps one entry per collective and scope, so import one of them",
                          r->path, scope, r->op, runs[j].path);
        goto fail;
      }
    if ((rc = make_entry(r, &fresh[i])) != 0)
      goto fail;
    n_fresh++;
    /* Say where the fitted curve misses a measured size by more than 10%:
     * usually a knee placed a size or two off a protocol switch. */
    double worst = 0, worst_bytes = 0;
    for (int k = 0; k < r->n; k++) {
      const core_prof_fit *f = core_prof_coll_fit(&fresh[i], r->bytes[k]);
      double e = fabs(f->alpha_us + r->bytes[k] / (f->algbw_GBps * 1e3) - r->time_us[k]) / r->time_us[k];
      if (e > worst) {
        worst = e;
        worst_bytes = r->bytes[k];
      }
    }
    if (worst > 0.10)
      note(notes, notes_len, "%s: the fit misses %.0f bytes by %.0f%% (see `ddpsim plot fit`)\n", r->path, worst_bytes,
           worst * 100);
    note(notes, notes_len, "%s: %s, %d ranks on %d node(s) -> nccl %s ring %s, %d sizes, %d fit regime(s)%s\n",
         r->path, r->how, r->ranks, r->nodes, r->op, scope, r->n, fresh[i].n_fits,
         r->validated ? "" : " (validation was off: #wrong N/A, data not checked)");
  }

  /* The base's entries that the import replaces go; the rest stay. */
  for (int i = 0; i < p->n_colls;) {
    core_prof_coll *c = &p->colls[i];
    int replaced = 0;
    for (int j = 0; j < n_fresh && !replaced; j++)
      replaced = !strcmp(c->backend, "nccl") && !strcmp(c->op, fresh[j].op) &&
                 !strcmp(c->algorithm, "ring") && !strcmp(c->scope, fresh[j].scope);
    if (!replaced) {
      note(notes, notes_len, "kept from %s: %s %s %s %s (%d ranks)\n", o->base, c->backend, c->op,
           c->algorithm, c->scope, c->ranks);
      i++;
      continue;
    }
    free_coll(c);
    memmove(c, c + 1, sizeof *c * (size_t)(p->n_colls - i - 1));
    p->n_colls--;
  }
  core_prof_coll *all = realloc(p->colls, sizeof *all * (size_t)(p->n_colls + n_fresh));
  if (!all) {
    rc = core_err_set(CORE_ENOMEM, "out of memory assembling the profile");
    goto fail;
  }
  p->colls = all;
  memcpy(p->colls + p->n_colls, fresh, sizeof *fresh * (size_t)n_fresh);
  p->n_colls += n_fresh;
  n_fresh = 0; /* owned by p now */

  /* Metadata: where the numbers came from. */
  if (o->name)
    snprintf(p->name, sizeof p->name, "%s", o->name);
  provenance(p, paths, n_paths, o->base);
  const cal_nccl_run *big = &runs[0];
  time_t newest = 0;
  int any_inter = 0;
  for (int i = 0; i < n_paths; i++) {
    if (runs[i].ranks > big->ranks)
      big = &runs[i];
    any_inter |= runs[i].nodes > 1;
    struct stat st;
    if (stat(runs[i].path, &st) == 0 && st.st_mtime > newest)
      newest = st.st_mtime;
  }
  snprintf(p->host, sizeof p->host, "%.100s%s", big->host, big->nodes > 1 ? " and other nodes" : "");
  if (newest) {
    struct tm tm;
    gmtime_r(&newest, &tm);
    strftime(p->date, sizeof p->date, "%Y-%m-%d", &tm); /* nccl-tests prints no date: the file's */
  }
  snprintf(p->backend, sizeof p->backend, "nccl");
  p->versions[0] = '\0';
  for (int i = 0; i < n_paths && !p->versions[0]; i++)
    snprintf(p->versions, sizeof p->versions, "%s", runs[i].version);
  p->nodes = big->nodes;
  p->ranks_per_node = big->ranks / big->nodes;
  if (o->link_gbps > 0)
    p->link_gbps = o->link_gbps;
  else if (any_inter) {
    if (p->link_gbps > 0)
      note(notes, notes_len, "link_gbps: the base's %g Gb/s is not the measured link's; dropped (pass --link-gbps to record it)\n",
           p->link_gbps);
    p->link_gbps = 0;
  }
  const char *dev = NULL;
  for (int i = 0; i < n_paths && !dev; i++)
    if (runs[i].device[0])
      dev = runs[i].device;
  if (dev && strcmp(dev, p->device_name) != 0) {
    note(notes, notes_len, "compute rates, memory and host bandwidth come from %s (device '%s'), the collectives from '%s'\n",
         o->base, p->device_name, dev);
    snprintf(p->device_name, sizeof p->device_name, "%s", dev);
  }
  if (!strcmp(kind, "gpu") && !(p->host_link_GBps > 0)) {
    rc = core_err_set(CORE_EINVAL, "%s is a CPU profile without device.host_link_GBps, which a GPU profile needs; pass a GPU base (e.g. scenarios/profiles/dgx-h100.cfg) or --device cpu",
                      o->base);
    goto fail;
  }
  snprintf(p->device_kind, sizeof p->device_kind, "%s", kind);
  *out = p;
  p = NULL;
fail:
  for (int i = 0; i < n_fresh; i++)
    free_coll(&fresh[i]);
  free(fresh);
  if (runs)
    for (int i = 0; i < n_paths; i++)
      cal_nccl_run_free(&runs[i]);
  free(runs);
  core_profile_free(p);
  return rc;
}
