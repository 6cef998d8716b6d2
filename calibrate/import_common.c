#include "import_common.h"

#include "calibrate/import_trace.h"
#include "calibrate/trace_scenario.h"
#include "core/afile.h"
#include "core/cfg.h"
#include "core/err.h"
#include "core/model.h"
#include "core/path.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cal_vnote(char *notes, size_t n, const char *fmt, va_list ap) {
  if (!notes || n == 0)
    return;
  size_t len = strlen(notes);
  if (len + 1 >= n)
    return;
  vsnprintf(notes + len, n - len, fmt, ap);
}

void cal_note(char *notes, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cal_vnote(notes, n, fmt, ap);
  va_end(ap);
}

/* Does text, meant for out, read back as a model? */
static int reads_back(const char *text, const char *out) {
  core_cfg vc;
  core_model *check = NULL;
  int rc = core_cfg_load_string(&vc, text, out, "model");
  if (rc == 0) {
    rc = core_model_from_setting(core_cfg_root(&vc), out, &check);
    core_cfg_free(&vc);
  }
  core_model_free(check);
  return rc;
}

int cal_write_model(const config_t *cfg, const char *out, const char *fmt, ...) {
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem)
    return core_err_set(CORE_ENOMEM, "out of memory writing the model");
  va_list ap;
  va_start(ap, fmt);
  vfprintf(mem, fmt, ap);
  va_end(ap);
  config_write(cfg, mem);
  fclose(mem);
  int rc = reads_back(text, out);
  core_afile a;
  if (rc) {
    rc = core_err_wrap(CORE_EINTERNAL, "the model written for %s does not load (a bug in ddpsim)", out);
  } else if ((rc = core_afile_open(&a, out)) == 0) {
    if (fwrite(text, 1, len, a.f) != len) {
      rc = core_err_errno(errno ? errno : EIO, "writing '%s'", out);
      core_afile_abort(&a);
    } else {
      rc = core_afile_commit(&a);
    }
  }
  free(text);
  return rc;
}

/* What an output names: an existing file by its device and inode, a new one
 * by its directory's real path and its name, after symlinks (a dangling one
 * names the file it would create). */
int cal_check_outputs(const char *const *out, const char *const *what, int n) {
  int rc = 0;
  for (int i = 0; i < n && !rc; i++) {
    if (!out[i])
      continue;
    if ((rc = core_afile_check(out[i])) != 0)
      return core_err_wrap(rc, "%s", what[i]);
    for (int j = 0; j < i && !rc; j++)
      if (out[j] && core_path_same_file(out[i], out[j]))
        rc = core_err_set(CORE_EUSAGE,
            "%s '%s' and %s '%s' are the same file: one would replace the other; choose another path for one of "
            "them",
            what[j], out[j], what[i], out[i]);
  }
  return rc;
}

/* No trace given twice (by two names or one): its steps would count twice. */
static int distinct_traces(const char *const *traces, int n) {
  for (int k = 1; k < n; k++) {
    struct stat a, b;
    if (stat(traces[k], &a) != 0)
      continue; /* the read says why */
    for (int j = 0; j < k; j++)
      if (stat(traces[j], &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        return core_err_set(CORE_EUSAGE,
            "'%s' and '%s' are the same trace: its steps would count twice; give each trace once", traces[j],
            traces[k]);
  }
  return 0;
}

int cal_trace_check_io(const char *const *traces, int n_traces, const char *base, const char *profile_base,
    const char *out, const char *scenario) {
  char prof[4400];
  int rc = distinct_traces(traces, n_traces);
  if (rc)
    return rc;
  for (int k = 0; k < n_traces; k++)
    core_afile_note_input(traces[k]);
  if (base)
    core_afile_note_input(base);
  if (profile_base)
    core_afile_note_input(profile_base);
  if (scenario)
    cal_trace_scenario_profile(scenario, prof, sizeof prof);
  const char *outs[3] = {out, scenario, scenario ? prof : NULL};
  const char *what[3] = {"the model", "--scenario", "the scenario's profile"};
  if ((rc = cal_check_outputs(outs, what, 3)) != 0)
    return rc;
  /* The scenario is made from the model read back, and names it. */
  struct stat sb;
  if (scenario && stat(out, &sb) == 0 && !S_ISREG(sb.st_mode))
    return core_err_set(CORE_EUSAGE,
        "the model '%s' is not a regular file (a device or a FIFO), but --scenario reads the model back and names it: "
        "write the model to a file",
        out);
  /* The scenario names the profile written beside it: through a device or a
   * FIFO the pair would be split (a profile in /dev, a scenario lost). */
  if (scenario && stat(scenario, &sb) == 0 && !S_ISREG(sb.st_mode))
    return core_err_set(CORE_EUSAGE,
        "--scenario '%s' is not a regular file (a device or a FIFO), but the scenario names the profile written "
        "beside it ('%s'): write the scenario to a file",
        scenario, prof);
  return 0;
}

void cal_model_name_from(const char *out, const char *ext, char *name, size_t n) {
  const char *b = core_path_base(out), *dot = strrchr(b, '.');
  size_t len = ext ? (size_t)core_path_stem_len(b, ext) : dot && dot != b ? (size_t)(dot - b) : strlen(b);
  size_t k = 0;
  for (size_t i = 0; i < len && k + 1 < n; i++) {
    char ch = b[i];
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
             ch == '_' || ch == '+' || ch == '-';
    name[k++] = ok ? ch : '-';
  }
  name[k] = '\0';
  if (!k)
    snprintf(name, n, "imported");
}

int cal_check_model_name(const char *name) {
  if (name && (strlen(name) == 0 || strlen(name) >= CAL_MODEL_NAME_LEN ||
                  strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-") != strlen(name)))
    return core_err_set(CORE_EUSAGE,
        "model name '%s': use 1 to %d letters, digits and . _ + - (it labels CSV rows and plots)", name,
        CAL_MODEL_NAME_LEN - 1);
  return 0;
}
