/*
 * import_common — what the importers (nccl-tests output, PyTorch traces,
 * GPU traces, the traced job's scenario) share, inside the import library
 * only: their notes to the user, the check of a command's outputs before it
 * starts, and the model file they write, checked before it replaces
 * anything.
 */
#ifndef CALIBRATE_IMPORT_COMMON_H
#define CALIBRATE_IMPORT_COMMON_H

#include <libconfig.h>
#include <stdarg.h>
#include <stddef.h>

/* Appends a formatted note to notes (n bytes, a C string), cut short where
 * it is full; nothing where notes is NULL or n is 0. */
void cal_note(char *notes, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void cal_vnote(char *notes, size_t n, const char *fmt, va_list ap);

/* Writes cfg to out (through core/afile.h) after a first line of comment
 * formatted from fmt, once the text reads back as a model: a model the
 * importer cannot read back is a bug, reported as CORE_EINTERNAL, and out
 * is left alone. */
int cal_write_model(const config_t *cfg, const char *out, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The outputs of one command, checked before it reads or writes anything:
 * each as core_afile_check does (so against the inputs noted by then: note
 * them first with core_afile_note_input), and no two the same file. out[i]
 * is what[i]'s path ("--scenario"); a NULL path is skipped. CORE_EUSAGE
 * with a message naming both when two outputs are one file. */
int cal_check_outputs(const char *const *out, const char *const *what, int n);

/* Model names: 1 to CAL_MODEL_NAME_LEN - 1 letters, digits and . _ + -
 * (core/model.c's rule: they label CSV rows and plots). */
enum { CAL_MODEL_NAME_LEN = 64 };
/* A model name from an output's file name: without ext (NULL: without what
 * follows its last '.'), cut to n - 1 characters, others than those a name
 * allows as '-'; "imported" when nothing is left. */
void cal_model_name_from(const char *out, const char *ext, char *name, size_t n);
/* name (NULL: none given) as --name: 0, or CORE_EUSAGE saying the rule. */
int cal_check_model_name(const char *name);

#endif
