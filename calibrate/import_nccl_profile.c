/* Assembling a profile from parsed nccl-tests runs: each run fitted into a
 * collective entry, the base profile's entries of the same collective and
 * scope replaced, its metadata rewritten (calibrate/import_nccl.h). */
#include "import_nccl.h"

#include "calibrate/fit.h"
#include "calibrate/import_common.h"

#include "core/err.h"
#include "core/path.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

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

/* "imported from nccl-tests: a, b (+N more); ..." within the field's size. */
static void provenance(core_profile *p, const char *const *paths, int n, const char *base) {
  char tail[200];
  snprintf(tail, sizeof tail,
      "; algorithm assumed ring (nccl-tests does not report NCCL's choice); the rest from %.60s", core_path_base(base));
  size_t room = sizeof p->provenance - strlen(tail) - 16, len;
  len = (size_t)snprintf(p->provenance, sizeof p->provenance, "imported from nccl-tests:");
  int i = 0;
  for (; i < n; i++) {
    const char *b = core_path_base(paths[i]);
    if (len + strlen(b) + 2 > room)
      break;
    len += (size_t)snprintf(p->provenance + len, sizeof p->provenance - len, "%s %s", i ? "," : "", b);
  }
  if (i < n)
    len += (size_t)snprintf(p->provenance + len, sizeof p->provenance - len, " +%d more", n - i);
  snprintf(p->provenance + len, sizeof p->provenance - len, "%s", tail);
}

/* One import: the files parsed and fitted, and the profile built of them. */
typedef struct nimport {
  const cal_nccl_opts *o;
  const char *kind; /* the profile's device kind: gpu | cpu */
  char *notes;
  size_t notes_len;
  const char *const *paths;
  int n;                 /* files */
  cal_nccl_run *runs;    /* [n] */
  core_prof_coll *fresh; /* [n]: the entries fitted */
  int n_fresh;           /* of them, those the import still owns */
  core_profile *p;       /* the base, becoming the result */
} nimport;

static int check_opts(const cal_nccl_opts *o, int n_paths, const char *kind) {
  if (n_paths < 1)
    return core_err_set(CORE_EUSAGE, "no nccl-tests output to import; give one file per collective");
  if (!o->base)
    return core_err_set(CORE_EUSAGE,
        "nccl-tests measures collectives only: pass --base PROFILE (e.g. scenarios/profiles/dgx-h100.cfg) "
        "for the compute rates, memory and host bandwidth the profile needs as well");
  if (strcmp(kind, "gpu") != 0 && strcmp(kind, "cpu") != 0)
    return core_err_set(CORE_EUSAGE, "--device must be gpu or cpu, not '%s'", kind);
  return 0;
}

/* Say where the fitted curve misses a measured size by more than 10%:
 * usually a knee placed a size or two off a protocol switch. */
static void note_fit(const nimport *im, const cal_nccl_run *r, const core_prof_coll *c) {
  double worst = 0, worst_bytes = 0;
  for (int k = 0; k < r->n; k++) {
    const core_prof_fit *f = core_prof_coll_fit(c, r->bytes[k]);
    double e = fabs(f->alpha_us + r->bytes[k] / (f->algbw_GBps * 1e3) - r->time_us[k]) / r->time_us[k];
    if (e > worst) {
      worst = e;
      worst_bytes = r->bytes[k];
    }
  }
  if (worst > 0.10)
    cal_note(im->notes, im->notes_len, "%s: the fit misses %.0f bytes by %.0f%% (see `ddpsim plot fit`)\n", r->path,
        worst_bytes, worst * 100);
}

/* File i: parsed, one entry per collective and scope, fitted. */
static int read_run(nimport *im, int i) {
  const cal_nccl_run *r = &im->runs[i];
  int rc;
  if ((rc = cal_nccl_parse(im->paths[i], &im->runs[i])) != 0)
    return rc;
  const char *scope = r->nodes > 1 ? "inter" : "intra";
  for (int j = 0; j < i; j++)
    if (!strcmp(im->runs[j].op, r->op) && (im->runs[j].nodes > 1) == (r->nodes > 1))
      return core_err_set(CORE_EINVAL,
          "%s: a second %s-node %s (%s already gave one); a profile keeps one entry per collective and scope, so "
          "import one of them",
          r->path, scope, r->op, im->runs[j].path);
  if ((rc = make_entry(r, &im->fresh[i])) != 0)
    return rc;
  im->n_fresh++;
  note_fit(im, r, &im->fresh[i]);
  cal_note(im->notes, im->notes_len,
      "%s: %s, %d ranks on %d node(s) -> nccl %s ring %s, %d sizes, %d fit regime(s)%s\n", r->path, r->how, r->ranks,
      r->nodes, r->op, scope, r->n, im->fresh[i].n_fits,
      r->validated ? "" : " (validation was off: #wrong N/A, data not checked)");
  return 0;
}

/* The base's entries that the import replaces go, the rest stay; the fitted
 * ones join them (owned by the profile from then on). */
static int merge(nimport *im) {
  core_profile *p = im->p;
  for (int i = 0; i < p->n_colls;) {
    core_prof_coll *c = &p->colls[i];
    int replaced = 0;
    for (int j = 0; j < im->n_fresh && !replaced; j++)
      replaced = !strcmp(c->backend, "nccl") && !strcmp(c->op, im->fresh[j].op) && !strcmp(c->algorithm, "ring") &&
                 !strcmp(c->scope, im->fresh[j].scope);
    if (!replaced) {
      cal_note(im->notes, im->notes_len, "kept from %s: %s %s %s %s (%d ranks)\n", im->o->base, c->backend, c->op,
          c->algorithm, c->scope, c->ranks);
      i++;
      continue;
    }
    free_coll(c);
    memmove(c, c + 1, sizeof *c * (size_t)(p->n_colls - i - 1));
    p->n_colls--;
  }
  core_prof_coll *all = realloc(p->colls, sizeof *all * (size_t)(p->n_colls + im->n_fresh));
  if (!all)
    return core_err_set(CORE_ENOMEM, "out of memory assembling the profile");
  p->colls = all;
  memcpy(p->colls + p->n_colls, im->fresh, sizeof *im->fresh * (size_t)im->n_fresh);
  p->n_colls += im->n_fresh;
  im->n_fresh = 0;
  return 0;
}

/* Metadata: where the numbers came from, on how many nodes. */
static void set_origin(nimport *im) {
  core_profile *p = im->p;
  if (im->o->name)
    snprintf(p->name, sizeof p->name, "%s", im->o->name);
  provenance(p, im->paths, im->n, im->o->base);
  snprintf(p->source, sizeof p->source, "imported"); /* measured: NCCL's protocol switch is in the fits */
  const cal_nccl_run *big = &im->runs[0];
  time_t newest = 0;
  for (int i = 0; i < im->n; i++) {
    if (im->runs[i].ranks > big->ranks)
      big = &im->runs[i];
    struct stat st;
    if (stat(im->runs[i].path, &st) == 0 && st.st_mtime > newest)
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
  for (int i = 0; i < im->n && !p->versions[0]; i++)
    snprintf(p->versions, sizeof p->versions, "%s", im->runs[i].version);
  p->nodes = big->nodes;
  p->ranks_per_node = big->ranks / big->nodes;
}

/* The link's rate, the device's name and kind: measured where nccl-tests
 * says, the base's only where it still holds. */
static int set_device(nimport *im) {
  core_profile *p = im->p;
  const char *dev = NULL;
  int any_inter = 0;
  for (int i = 0; i < im->n; i++) {
    any_inter |= im->runs[i].nodes > 1;
    if (!dev && im->runs[i].device[0])
      dev = im->runs[i].device;
  }
  if (im->o->link_gbps > 0)
    p->link_gbps = im->o->link_gbps;
  else if (any_inter) {
    if (p->link_gbps > 0)
      cal_note(im->notes, im->notes_len,
          "link_gbps: the base's %g Gb/s is not the measured link's; dropped (pass --link-gbps to record it)\n",
          p->link_gbps);
    p->link_gbps = 0;
  }
  if (dev && strcmp(dev, p->device_name) != 0) {
    cal_note(im->notes, im->notes_len,
        "compute rates, memory and host bandwidth come from %s (device '%s'), the collectives from '%s'\n", im->o->base,
        p->device_name, dev);
    snprintf(p->device_name, sizeof p->device_name, "%s", dev);
  }
  if (!strcmp(im->kind, "gpu") && !(p->host_link_GBps > 0))
    return core_err_set(CORE_EINVAL,
        "%s is a CPU profile without device.host_link_GBps, which a GPU profile needs; pass a GPU base (e.g. "
        "scenarios/profiles/dgx-h100.cfg) or --device cpu",
        im->o->base);
  snprintf(p->device_kind, sizeof p->device_kind, "%s", im->kind);
  return 0;
}

int cal_import_nccl(
    const char *const *paths, int n_paths, const cal_nccl_opts *o, core_profile **out, char *notes, size_t notes_len) {
  nimport im = {.o = o,
      .kind = o->device_kind ? o->device_kind : "gpu",
      .notes = notes,
      .notes_len = notes_len,
      .paths = paths,
      .n = n_paths};
  int rc;
  *out = NULL;
  if (notes && notes_len)
    notes[0] = '\0';
  if ((rc = check_opts(o, n_paths, im.kind)) != 0)
    return rc;
  if ((rc = core_profile_load(o->base, &im.p)) != 0)
    return core_err_wrap(rc, "loading the base profile");
  im.runs = calloc((size_t)n_paths, sizeof *im.runs);
  im.fresh = calloc((size_t)n_paths, sizeof *im.fresh);
  if (!im.runs || !im.fresh)
    rc = core_err_set(CORE_ENOMEM, "out of memory importing nccl-tests output");
  for (int i = 0; rc == 0 && i < n_paths; i++)
    rc = read_run(&im, i);
  if (rc == 0 && (rc = merge(&im)) == 0) {
    set_origin(&im);
    rc = set_device(&im);
  }
  if (rc == 0) {
    *out = im.p;
    im.p = NULL;
  }
  for (int i = 0; i < im.n_fresh; i++)
    free_coll(&im.fresh[i]);
  free(im.fresh);
  for (int i = 0; im.runs && i < n_paths; i++)
    cal_nccl_run_free(&im.runs[i]);
  free(im.runs);
  core_profile_free(im.p);
  return rc;
}
