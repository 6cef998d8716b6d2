/*
 * afile — the one way ddpsim writes a file, so that no output ever destroys
 * what the user has.
 *
 * A regular file (or a name not yet taken) is written to a temp file in the
 * target's directory, flushed, fsynced and renamed over the target, then the
 * directory is fsynced (the sequence Redis uses in clusterSaveConfig): readers
 * see the old file or the whole new one, and a full disk or a crash mid-write
 * leaves the previous file intact. Around that:
 *  - a symlink is followed: its target is replaced, the link stays;
 *  - a character device or a FIFO (/dev/null, /dev/stdout, a pipe) is written
 *    through, never replaced; core_afile_open_atomic refuses them where a
 *    rename is essential (checkpoints);
 *  - a directory, block device or socket is refused, as is an output that is
 *    the same file (device and inode) as an input of this command: every
 *    reader notes what it opens with core_afile_note_input;
 *  - a name too long for its temp file ("<name>.tmp.XXXXXX" must fit the
 *    file system's NAME_MAX) is refused with the length it may have;
 *  - missing parent directories are not created (core_mkdirs does that for
 *    the directories a command is asked to make);
 *  - the temp file is removed on every error path and, for SIGINT, SIGTERM
 *    and SIGHUP left at their default, when the process is stopped; while
 *    open it holds an flock, so core_afile_sweep_stale can tell the temp
 *    files of a dead writer from those of a live one;
 *  - a killed writer's temp files of the same target ("<name>.tmp." and six
 *    letters, unlocked, unchanged for a minute) are removed, and reported,
 *    when the target is opened again, so that they do not pile up.
 * Refusals are CORE_EUSAGE (exit 2) with a message naming the path; so is
 * a directory the user may not write into or create (permissions, a
 * read-only file system), like one that does not exist.
 */
#ifndef CORE_AFILE_H
#define CORE_AFILE_H

#include <stdio.h>

typedef struct core_afile {
  FILE *f;
  int direct;      /* written through (character device, FIFO): no temp, no rename */
  int slot;        /* entry in the signal handler's table of temp files; -1 if none */
  char path[4096]; /* what is replaced: the target after symlinks */
  char tmp[4200];  /* the temp file; empty when direct */
  int locked;      /* appending: lock_fd is the target's directory, held locked */
  int lock_fd;
} core_afile;

/* Open path for writing; write through a->f. */
int core_afile_open(core_afile *a, const char *path);
/* The same, but path must end up a regular file (no write-through). */
int core_afile_open_atomic(core_afile *a, const char *path);
/* Open path to add to its end, as atomically as core_afile_open writes it:
 * an existing regular file is copied into the temp file, a->f (open for
 * reading too, so the caller may look back) is left at its end, and commit
 * renames it over path; a crash or a full disk mid-write leaves the file as
 * it was. *had: the bytes copied (0 for a new file, or for a character
 * device or FIFO, which are written through). Symlinks, devices and inputs
 * as for core_afile_open. Appenders of one directory take turns (an flock on
 * it, from the copy to the rename), so none loses another's rows; where the
 * file system has no flock (some network ones), the last rename wins. */
int core_afile_open_append(core_afile *a, const char *path, long long *had);
/* Flush, fsync, rename into place, fsync the directory (direct: flush and
 * close). On any failure the temp file is removed and the target untouched. */
int core_afile_commit(core_afile *a);
/* Give up: close and remove the temp file. Safe to call twice. */
void core_afile_abort(core_afile *a);

/* Every check core_afile_open makes, with nothing created: for commands that
 * write only after long work, so that they refuse before it. */
int core_afile_check(const char *path);

/* Start noting inputs: the ddpsim command does, for the whole process; a
 * library user (a test writing and rereading one path) need not. */
void core_afile_track_inputs(int on);
/* Note a file this command reads (call after opening it): no output may then
 * be the same file. Missing files are ignored. The _fd form takes the
 * identity from the open descriptor and path only to name it in messages. */
void core_afile_note_input(const char *path);
void core_afile_note_input_fd(int fd, const char *path);

/* fn is called, at once, when a file noted as an input is the regular file
 * standard output goes to (`ddpsim model m.cfg >> m.cfg`): what the command
 * prints would be added to that input. Standard output is taken as it is at
 * this call (set it before any file is opened). The ddpsim command refuses
 * there; a library user may leave it unset (NULL). */
void core_afile_on_stdout_input(void (*fn)(const char *path));
/* Remove the temp files of every output still open, as a stop by a signal
 * does: for a process that must end at once (_exit). */
void core_afile_remove_temps(void);

/* Remove the temp files ("<name>.tmp.*") that writers left in dir when they
 * died: those nobody holds locked. Each removal is reported on stderr.
 * Returns how many were removed, or a negative error code. */
int core_afile_sweep_stale(const char *dir, const char *name_prefix);

/* mkdir -p; an existing directory is fine. */
int core_mkdirs(const char *dir);

/* The directories one core_mkdirs_made call created: path, and the lengths
 * of its prefixes whose mkdir made them, in the order made (a path with
 * ".." may pass through directories that were there before). */
#define CORE_MADE_DIRS_MAX 256
typedef struct core_made_dirs {
  char path[4096];
  size_t len[CORE_MADE_DIRS_MAX];
  int n;
} core_made_dirs;

/* core_mkdirs that notes in *made what it creates, so that a run refused
 * after it can take back what it made (core_made_dirs_undo). */
int core_mkdirs_made(const char *dir, core_made_dirs *made);

/* Removes the directories *made holds, deepest first, while they are empty;
 * never one that existed before. A refused run leaves nothing behind.
 * Safe on a zeroed or already undone *made. */
void core_made_dirs_undo(core_made_dirs *made);

#endif
