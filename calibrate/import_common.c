#include "import_common.h"

#include "core/afile.h"
#include "core/cfg.h"
#include "core/err.h"
#include "core/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
