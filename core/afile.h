/*
 * afile — write a file so that readers see either the old version or the
 * whole new one, never a torn one: write to a temp file in the same
 * directory, flush, fsync, rename over the target, fsync the directory
 * (the sequence Redis uses in clusterSaveConfig / rdbSave). Results, profiles
 * and checkpoints all go through it, so a full disk or a crash mid-write
 * leaves the previous file intact and no temp file behind.
 */
#ifndef CORE_AFILE_H
#define CORE_AFILE_H

#include <stdio.h>

typedef struct core_afile {
  FILE *f;
  char path[4096];
  char tmp[4200];
} core_afile;

/* Open a temp file beside path; write through a->f. */
int core_afile_open(core_afile *a, const char *path);
/* Flush, fsync, rename into place, fsync the directory. On any failure the
 * temp file is removed and the target is untouched. */
int core_afile_commit(core_afile *a);
/* Give up: close and remove the temp file. Safe to call twice. */
void core_afile_abort(core_afile *a);

/* mkdir -p; an existing directory is fine. */
int core_mkdirs(const char *dir);

#endif
