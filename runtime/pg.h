/*
 * pg — the process group: who this process is among the ranks of a job, and
 * the communicator that joins them. The identity comes from the environment
 * variables the user's launcher already sets, so ddpsim runs unchanged under
 * torchrun, srun and mpirun; the ranks meet through one of Gloo's stores (a
 * shared directory or a redis-server) named by a rendezvous spec, and come
 * out with a Gloo communicator (runtime/gloo.h).
 *
 * Precedence, first match wins:
 *   torchrun  when any of RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE is
 *             set; the node index is GROUP_RANK, else rank / local size.
 *   Slurm     when SLURM_PROCID is set: SLURM_PROCID, SLURM_NTASKS (or
 *             SLURM_NPROCS), SLURM_LOCALID, SLURM_NODEID; tasks on this node
 *             from SLURM_STEP_TASKS_PER_NODE, SLURM_NTASKS_PER_NODE or
 *             SLURM_TASKS_PER_NODE ("2(x3),1" lists are expanded).
 *   Open MPI  when OMPI_COMM_WORLD_RANK or _SIZE is set: OMPI_COMM_WORLD_RANK,
 *             _SIZE, _LOCAL_RANK, _LOCAL_SIZE; the node index is rank / local
 *             size (Open MPI's default by-slot mapping).
 * MASTER_ADDR and MASTER_PORT are read under every convention. No variable
 * at all means a single process: rank 0 of 1. A variable that is not a
 * number, out of range, missing, or contradicting another is CORE_EINVAL
 * with a message naming it and saying what to set.
 */
#ifndef RUNTIME_PG_H
#define RUNTIME_PG_H

#include "runtime/comm.h"
#include "runtime/store.h"

enum { RT_PG_ADDR_MAX = 256 };

typedef struct rt_pg_info {
  int rank, world_size;
  int local_rank, local_world_size; /* among the ranks of this node */
  int node_rank;                    /* index of this node in the job */
  char master_addr[RT_PG_ADDR_MAX]; /* MASTER_ADDR, or "" */
  int master_port;                  /* MASTER_PORT, or 0 */
  const char *source;               /* "torchrun", "slurm", "openmpi" or "single" */
} rt_pg_info;

/* Fill *info from the environment (see above). */
int rt_pg_from_env(rt_pg_info *info);
/* The launcher's count of restarts before this attempt (DDPSIM_RESTART_COUNT,
 * 0 when unset); a value that is not such a count is an error naming it. */
int rt_pg_restart_count(int *out);

/* ---- rendezvous specs ---------------------------------------------------- */

enum rt_pg_store_kind { RT_PG_STORE_FILE, RT_PG_STORE_REDIS };

typedef struct rt_pg_spec {
  enum rt_pg_store_kind kind;
  char path[4096];           /* FILE: the shared directory */
  char host[RT_PG_ADDR_MAX]; /* REDIS */
  int port;                  /* REDIS */
} rt_pg_spec;

/* Accepted forms: "file://DIR", a directory path ("/shared/rdv", "./rdv", or
 * any existing directory), "redis://HOST:PORT" ("redis://HOST" means Redis's
 * default port 6379; "[v6addr]" in brackets). Anything else is CORE_EUSAGE
 * with the accepted forms. */
int rt_pg_parse_spec(const char *spec, rt_pg_spec *out);

/* Parse spec and open its store under prefix. */
int rt_pg_open_store(const char *spec, const char *prefix, rt_store **out);

/* A rendezvous directory of this process's own, $TMPDIR/ddpsim-rdzv-XXXXXX
 * (/tmp without TMPDIR), for a lone rank that was given no spec (it still
 * meets itself through a store). dir holds at least RT_PG_PRIVATE_DIR_MAX
 * bytes. */
enum { RT_PG_PRIVATE_DIR_MAX = 4200 };
int rt_pg_private_dir(char *dir);
/* Remove such a directory with the store's key files in it, once the store
 * is closed. An empty dir does nothing. */
void rt_pg_private_dir_remove(const char *dir);

/* ---- connecting ---------------------------------------------------------- */

/* The address this rank listens on when the caller names none: the local
 * address the kernel routes to MASTER_ADDR from (so each rank of the network
 * testbed binds its own namespace's address), else 127.0.0.1 when the whole
 * job is on this node. A job spanning nodes without MASTER_ADDR is
 * CORE_EUSAGE. */
int rt_pg_default_bind(const rt_pg_info *info, char *buf, size_t len);

/* Rendezvous every rank of info through the store named by spec, under
 * prefix (unique per run and per restart generation: a key can be set once),
 * listening on bind_addr (NULL: rt_pg_default_bind), and return the Gloo
 * communicator in *out. timeout_s bounds the rendezvous and then every
 * collective; a rank that never shows up makes this fail with CORE_ETIMEDOUT
 * within about that time. */
int rt_pg_connect(const rt_pg_info *info, const char *spec, const char *bind_addr, double timeout_s, const char *prefix,
    rt_comm **out);

#endif
