#include "runtime/pg.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/err.h"
#include "runtime/gloo.h"

/* Redis's default port (redis.conf: "port 6379"). */
enum { REDIS_DEFAULT_PORT = 6379 };

/* ---- environment ---------------------------------------------------------- */

/* Read the integer variable name into *out; *present says whether it is set.
 * A value that is not a whole decimal number in [min, max] is an error that
 * names the variable and what to set it to. */
static int env_int(const char *name, int min, int max, const char *hint, int *out, int *present) {
  const char *v = getenv(name);
  *present = v != NULL;
  if (!v)
    return 0;
  const char *p = v;
  while (isspace((unsigned char)*p))
    p++;
  char *end = NULL;
  errno = 0;
  long x = strtol(p, &end, 10);
  if (end == p || errno == ERANGE) {
    return core_err_set(CORE_EINVAL, "environment variable %s='%s' is not an integer: %s", name, v, hint);
  }
  while (isspace((unsigned char)*end))
    end++;
  if (*end != '\0')
    return core_err_set(CORE_EINVAL, "environment variable %s='%s' is not an integer: %s", name, v, hint);
  if (x < min || x > max)
    return core_err_set(
        CORE_EINVAL, "environment variable %s=%ld is out of range [%d, %d]: %s", name, x, min, max, hint);
  *out = (int)x;
  return 0;
}

/* An integer variable that must be set. */
static int env_int_req(const char *name, int min, int max, const char *hint, int *out) {
  int present = 0;
  int rc = env_int(name, min, max, hint, out, &present);
  if (rc)
    return rc;
  if (!present)
    return core_err_set(CORE_EINVAL, "environment variable %s is not set: %s", name, hint);
  return 0;
}

int rt_pg_restart_count(int *out) {
  int present = 0;
  *out = 0;
  return env_int("DDPSIM_RESTART_COUNT", 0, 1000, "`ddpsim launch` sets it for the ranks it starts; unset it otherwise",
      out, &present);
}

/* Checks every convention shares once its values are read. */
static int check_shape(
    rt_pg_info *in, const char *v_rank, const char *v_world, const char *v_lrank, const char *v_lsize) {
  if (in->rank >= in->world_size)
    return core_err_set(CORE_EINVAL,
        "%s=%d is not below %s=%d: ranks run from 0 to %s-1; fix "
        "the launcher's rank numbering or the world size",
        v_rank, in->rank, v_world, in->world_size, v_world);
  if (in->local_world_size > in->world_size)
    return core_err_set(CORE_EINVAL,
        "%s=%d exceeds %s=%d: a node cannot hold more ranks than "
        "the job",
        v_lsize, in->local_world_size, v_world, in->world_size);
  if (in->local_rank >= in->local_world_size)
    return core_err_set(CORE_EINVAL,
        "%s=%d is not below %s=%d: local ranks run from 0 to "
        "%s-1",
        v_lrank, in->local_rank, v_lsize, in->local_world_size, v_lsize);
  if (in->local_rank > in->rank)
    return core_err_set(CORE_EINVAL,
        "%s=%d exceeds %s=%d: a local rank cannot exceed the "
        "global rank",
        v_lrank, in->local_rank, v_rank, in->rank);
  return 0;
}

static int from_torchrun(rt_pg_info *in) {
  int rc = env_int_req(
      "WORLD_SIZE", 1, INT_MAX, "set WORLD_SIZE to the number of ranks (torchrun sets it)", &in->world_size);
  if (rc)
    return rc;
  rc = env_int_req("RANK", 0, INT_MAX, "set RANK to this process's rank, 0..WORLD_SIZE-1", &in->rank);
  if (rc)
    return rc;
  int has_lr = 0, has_lw = 0, has_group = 0;
  rc = env_int("LOCAL_RANK", 0, INT_MAX, "set LOCAL_RANK to the rank within this node", &in->local_rank, &has_lr);
  if (rc)
    return rc;
  rc = env_int("LOCAL_WORLD_SIZE", 1, INT_MAX, "set LOCAL_WORLD_SIZE to the number of ranks on this node",
      &in->local_world_size, &has_lw);
  if (rc)
    return rc;
  if (has_lr != has_lw)
    return core_err_set(CORE_EINVAL,
        "environment variable %s is set but %s is not: set both "
        "(torchrun does) or neither (one node)",
        has_lr ? "LOCAL_RANK" : "LOCAL_WORLD_SIZE", has_lr ? "LOCAL_WORLD_SIZE" : "LOCAL_RANK");
  if (!has_lr) {
    /* Neither: every rank is on this node. */
    in->local_rank = in->rank;
    in->local_world_size = in->world_size;
  }
  rc = check_shape(in, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE");
  if (rc)
    return rc;
  /* torchrun's node index is GROUP_RANK; without it, nodes are filled in
   * rank order as torchrun numbers them. */
  rc = env_int("GROUP_RANK", 0, INT_MAX, "set GROUP_RANK to this node's index", &in->node_rank, &has_group);
  if (rc)
    return rc;
  if (!has_group)
    in->node_rank = in->rank / in->local_world_size;
  in->source = "torchrun";
  return 0;
}

/* Slurm's SLURM_TASKS_PER_NODE (and SLURM_STEP_TASKS_PER_NODE) list task
 * counts per node, compressed: "2(x3),1" is 2,2,2,1. Return the count of
 * node `node`; var names the variable in messages. */
static int slurm_tasks_on_node(const char *v, const char *var, int node, int *out) {
  const char *p = v;
  int idx = 0;
  while (*p) {
    char *end;
    errno = 0;
    long n = strtol(p, &end, 10);
    if (end == p || errno || n < 1 || n > INT_MAX)
      goto bad;
    long reps = 1;
    p = end;
    if (*p == '(') {
      if (p[1] != 'x')
        goto bad;
      reps = strtol(p + 2, &end, 10);
      if (end == p + 2 || *end != ')' || reps < 1)
        goto bad;
      p = end + 1;
    }
    if (node < idx + reps) {
      *out = (int)n;
      return 0;
    }
    idx += (int)reps;
    if (*p == ',')
      p++;
    else if (*p)
      goto bad;
  }
  return core_err_set(CORE_EINVAL,
      "environment variable %s='%s' lists %d nodes but "
      "SLURM_NODEID=%d: run under srun, or set "
      "SLURM_NTASKS_PER_NODE",
      var, v, idx, node);
bad:
  return core_err_set(CORE_EINVAL,
      "environment variable %s='%s' is not a list like "
      "'2(x3),1': run under srun, or set SLURM_NTASKS_PER_NODE",
      var, v);
}

/* The job's task count: SLURM_NTASKS, or its older name SLURM_NPROCS. */
static int slurm_world_size(rt_pg_info *in) {
  int has = 0;
  int rc =
      env_int("SLURM_NTASKS", 1, INT_MAX, "set SLURM_NTASKS to the number of tasks (srun -n)", &in->world_size, &has);
  if (rc || has)
    return rc;
  rc = env_int("SLURM_NPROCS", 1, INT_MAX, "set SLURM_NTASKS to the number of tasks", &in->world_size, &has);
  if (rc)
    return rc;
  if (!has)
    return core_err_set(CORE_EINVAL, "environment variable SLURM_NTASKS is not set but "
                                     "SLURM_PROCID is: run the job with srun -n N (or set "
                                     "SLURM_NTASKS)");
  return 0;
}

/* Tasks on this node: the step's own list (srun sets it), the uniform
 * --ntasks-per-node, or the allocation's list, in that order; a bare
 * salloc shell without any is one node. *var names the variable used. */
static int slurm_local_size(rt_pg_info *in, int has_lr, const char **var) {
  int has = 0, rc;
  *var = "SLURM_STEP_TASKS_PER_NODE";
  const char *list = getenv(*var);
  if (!list) {
    *var = "SLURM_NTASKS_PER_NODE";
    rc = env_int(*var, 1, INT_MAX, "set SLURM_NTASKS_PER_NODE to the tasks per node (srun --ntasks-per-node)",
        &in->local_world_size, &has);
    if (rc)
      return rc;
    if (!has) {
      *var = "SLURM_TASKS_PER_NODE";
      list = getenv(*var);
    }
  }
  if (list)
    return slurm_tasks_on_node(list, *var, in->node_rank, &in->local_world_size);
  if (!has) {
    if (has_lr)
      return core_err_set(CORE_EINVAL, "SLURM_LOCALID is set but neither "
                                       "SLURM_NTASKS_PER_NODE nor SLURM_TASKS_PER_NODE: run "
                                       "under srun, or set SLURM_NTASKS_PER_NODE");
    in->local_world_size = in->world_size;
  }
  return 0;
}

static int from_slurm(rt_pg_info *in) {
  int has = 0, has_lr = 0;
  const char *lsize_var = NULL;
  int rc =
      env_int_req("SLURM_PROCID", 0, INT_MAX, "run under srun, which sets SLURM_PROCID to the task's rank", &in->rank);
  if (rc || (rc = slurm_world_size(in)) != 0)
    return rc;
  rc = env_int("SLURM_NODEID", 0, INT_MAX, "set SLURM_NODEID to this node's index", &in->node_rank, &has);
  if (rc)
    return rc;
  rc = env_int(
      "SLURM_LOCALID", 0, INT_MAX, "set SLURM_LOCALID to the task's index on its node", &in->local_rank, &has_lr);
  if (rc || (rc = slurm_local_size(in, has_lr, &lsize_var)) != 0)
    return rc;
  if (!has_lr) {
    /* Only a one-node job tells the local rank without SLURM_LOCALID. */
    if (in->local_world_size != in->world_size)
      return core_err_set(CORE_EINVAL, "environment variable SLURM_LOCALID is not set on a "
                                       "multi-node job: run under srun, which sets it");
    in->local_rank = in->rank;
  }
  rc = check_shape(in, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", lsize_var);
  if (rc)
    return rc;
  in->source = "slurm";
  return 0;
}

static int from_openmpi(rt_pg_info *in) {
  int rc = env_int_req("OMPI_COMM_WORLD_SIZE", 1, INT_MAX,
      "run under mpirun, which sets OMPI_COMM_WORLD_SIZE to the number of "
      "ranks",
      &in->world_size);
  if (rc)
    return rc;
  rc = env_int_req("OMPI_COMM_WORLD_RANK", 0, INT_MAX, "run under mpirun, which sets OMPI_COMM_WORLD_RANK", &in->rank);
  if (rc)
    return rc;
  int has_lr = 0, has_ls = 0;
  rc = env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0, INT_MAX, "set OMPI_COMM_WORLD_LOCAL_RANK to the rank within this node",
      &in->local_rank, &has_lr);
  if (rc)
    return rc;
  rc = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", 1, INT_MAX,
      "set OMPI_COMM_WORLD_LOCAL_SIZE to the number of ranks on this node", &in->local_world_size, &has_ls);
  if (rc)
    return rc;
  if (has_lr != has_ls)
    return core_err_set(CORE_EINVAL,
        "environment variable %s is set but %s is not: set both "
        "(mpirun does) or neither (one node)",
        has_lr ? "OMPI_COMM_WORLD_LOCAL_RANK" : "OMPI_COMM_WORLD_LOCAL_SIZE",
        has_lr ? "OMPI_COMM_WORLD_LOCAL_SIZE" : "OMPI_COMM_WORLD_LOCAL_RANK");
  if (!has_lr) {
    in->local_rank = in->rank;
    in->local_world_size = in->world_size;
  }
  rc = check_shape(
      in, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE");
  if (rc)
    return rc;
  /* Open MPI exports no node index; its default mapping fills nodes by slot,
   * in rank order. */
  in->node_rank = in->rank / in->local_world_size;
  in->source = "openmpi";
  return 0;
}

static int read_master(rt_pg_info *in) {
  const char *a = getenv("MASTER_ADDR");
  if (a) {
    if (!*a)
      return core_err_set(CORE_EINVAL, "environment variable MASTER_ADDR is empty: set it to "
                                       "the host name or address of rank 0, or unset it");
    if (strlen(a) >= sizeof in->master_addr)
      return core_err_set(CORE_EINVAL,
          "environment variable MASTER_ADDR is longer than %zu "
          "characters: set it to a host name or address",
          sizeof in->master_addr - 1);
    memcpy(in->master_addr, a, strlen(a) + 1);
  }
  int has = 0;
  return env_int(
      "MASTER_PORT", 1, 65535, "set MASTER_PORT to a free TCP port on rank 0's host", &in->master_port, &has);
}

int rt_pg_from_env(rt_pg_info *info) {
  rt_pg_info in;
  memset(&in, 0, sizeof in);
  in.world_size = 1;
  in.local_world_size = 1;
  in.source = "single";
  int rc;
  if (getenv("RANK") || getenv("WORLD_SIZE") || getenv("LOCAL_RANK") || getenv("LOCAL_WORLD_SIZE"))
    rc = from_torchrun(&in);
  else if (getenv("SLURM_PROCID"))
    rc = from_slurm(&in);
  else if (getenv("OMPI_COMM_WORLD_RANK") || getenv("OMPI_COMM_WORLD_SIZE"))
    rc = from_openmpi(&in);
  else
    rc = 0;
  if (rc)
    return rc;
  rc = read_master(&in);
  if (rc)
    return rc;
  *info = in;
  return 0;
}

/* ---- rendezvous specs ----------------------------------------------------- */

static int spec_usage(const char *spec, const char *why) {
  return core_err_set(CORE_EUSAGE,
      "rendezvous spec '%s': %s; accepted forms: a shared "
      "directory (/path/to/dir, ./dir or file:///path/to/dir) "
      "for Gloo's FileStore, or redis://HOST:PORT for its "
      "RedisStore",
      spec, why);
}

static int parse_redis(const char *spec, const char *rest, rt_pg_spec *out) {
  const char *host = rest, *host_end, *port = NULL;
  if (*rest == '[') {
    host = rest + 1;
    host_end = strchr(host, ']');
    if (!host_end)
      return spec_usage(spec, "an IPv6 address in [ ] lacks its ']'");
    if (host_end[1] == ':')
      port = host_end + 2;
    else if (host_end[1] != '\0')
      return spec_usage(spec, "unexpected text after ']'");
  } else {
    host_end = strchr(rest, ':');
    if (host_end)
      port = host_end + 1;
    else
      host_end = rest + strlen(rest);
    if (strchr(host, '/'))
      return spec_usage(spec, "a redis:// spec has no path");
  }
  size_t hl = (size_t)(host_end - host);
  if (hl == 0)
    return spec_usage(spec, "no host after redis://");
  if (hl >= sizeof out->host)
    return spec_usage(spec, "host name too long");
  memcpy(out->host, host, hl);
  out->host[hl] = '\0';
  out->port = REDIS_DEFAULT_PORT;
  if (port) {
    char *end;
    errno = 0;
    long p = strtol(port, &end, 10);
    if (end == port || *end != '\0' || errno || p < 1 || p > 65535)
      return spec_usage(spec, "the port must be a number in 1..65535");
    out->port = (int)p;
  }
  out->kind = RT_PG_STORE_REDIS;
  return 0;
}

static int set_path(const char *spec, const char *path, rt_pg_spec *out) {
  if (!*path)
    return spec_usage(spec, "no directory given");
  if (strlen(path) >= sizeof out->path)
    return spec_usage(spec, "directory path too long");
  memcpy(out->path, path, strlen(path) + 1);
  out->kind = RT_PG_STORE_FILE;
  return 0;
}

int rt_pg_parse_spec(const char *spec, rt_pg_spec *out) {
  memset(out, 0, sizeof *out);
  if (!spec || !*spec)
    return spec_usage(spec ? spec : "", "empty");
  if (strncmp(spec, "redis://", 8) == 0)
    return parse_redis(spec, spec + 8, out);
  if (strncmp(spec, "file://", 7) == 0)
    return set_path(spec, spec + 7, out);
  if (strstr(spec, "://"))
    return spec_usage(spec, "unknown scheme");
  if (spec[0] == '/' || spec[0] == '.')
    return set_path(spec, spec, out);
  struct stat st;
  if (stat(spec, &st) == 0 && S_ISDIR(st.st_mode))
    return set_path(spec, spec, out);
  return spec_usage(spec, "neither a URL nor an existing directory");
}

int rt_pg_open_store(const char *spec, const char *prefix, rt_store **out) {
  rt_pg_spec ps;
  int rc = rt_pg_parse_spec(spec, &ps);
  if (rc)
    return rc;
  if (ps.kind == RT_PG_STORE_FILE)
    return rt_store_open_file(ps.path, prefix, out);
  return rt_store_open_redis(ps.host, ps.port, prefix, out);
}

/* ---- connecting ----------------------------------------------------------- */

/* The source address of a route to host: a UDP socket's connect() picks the
 * route without sending anything. */
static int route_source(const char *host, char *buf, size_t len) {
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  int g = getaddrinfo(host, "9", &hints, &res); /* any port: nothing is sent */
  if (g != 0)
    return core_err_set(CORE_EINVAL,
        "MASTER_ADDR '%s' does not resolve: %s; set it to rank "
        "0's address, or pass a bind address",
        host, gai_strerror(g));
  int rc = 0;
  int fd = socket(res->ai_family, SOCK_DGRAM, 0);
  if (fd < 0) {
    rc = core_err_errno(errno, "finding the route to MASTER_ADDR '%s': socket", host);
    goto free_res;
  }
  if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    rc = core_err_errno(errno,
        "finding the route to MASTER_ADDR '%s' (no route from this "
        "host? pass a bind address)",
        host);
    goto close_fd;
  }
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
    rc = core_err_errno(errno, "finding the route to MASTER_ADDR '%s': getsockname", host);
    goto close_fd;
  }
  g = getnameinfo((struct sockaddr *)&ss, sl, buf, (socklen_t)len, NULL, 0, NI_NUMERICHOST);
  if (g != 0)
    rc = core_err_set(CORE_EIO, "finding the route to MASTER_ADDR '%s': %s", host, gai_strerror(g));
close_fd:
  close(fd);
free_res:
  freeaddrinfo(res);
  return rc;
}

int rt_pg_default_bind(const rt_pg_info *info, char *buf, size_t len) {
  if (info->master_addr[0])
    return route_source(info->master_addr, buf, len);
  if (info->local_world_size < info->world_size)
    return core_err_set(CORE_EUSAGE,
        "rank %d: the job spans nodes (%d ranks, %d on this one) "
        "but MASTER_ADDR is not set, so there is no way to tell "
        "which address the other nodes reach: set MASTER_ADDR to "
        "rank 0's host, or pass a bind address",
        info->rank, info->world_size, info->local_world_size);
  snprintf(buf, len, "127.0.0.1");
  return 0;
}

int rt_pg_private_dir(char *dir) {
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !tmp[0] || strlen(tmp) > RT_PG_PRIVATE_DIR_MAX - 32)
    tmp = "/tmp";
  snprintf(dir, RT_PG_PRIVATE_DIR_MAX, "%s/ddpsim-rdzv-XXXXXX", tmp);
  if (!mkdtemp(dir)) {
    int e = errno;
    dir[0] = '\0';
    return core_err_errno(e, "cannot create a rendezvous directory in '%s'; set TMPDIR to a writable directory", tmp);
  }
  return 0;
}

void rt_pg_private_dir_remove(const char *dir) {
  if (!dir || !dir[0])
    return;
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char f[RT_PG_PRIVATE_DIR_MAX + 512];
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(f, sizeof f, "%s/%s", dir, e->d_name);
      unlink(f);
    }
  }
  if (d)
    closedir(d);
  rmdir(dir);
}

int rt_pg_connect(const rt_pg_info *info, const char *spec, const char *bind_addr, double timeout_s, const char *prefix,
    rt_comm **out) {
  if (!info || !out)
    return core_err_set(CORE_EINVAL, "rt_pg_connect: no process-group info or output");
  *out = NULL;
  if (!prefix || !*prefix)
    return core_err_set(CORE_EINVAL, "rt_pg_connect: a rendezvous prefix is required (unique "
                                     "per run and restart, e.g. job id + generation)");
  char bind[RT_PG_ADDR_MAX];
  int rc;
  if (bind_addr) {
    snprintf(bind, sizeof bind, "%s", bind_addr);
  } else {
    rc = rt_pg_default_bind(info, bind, sizeof bind);
    if (rc)
      return rc;
  }
  rt_store *store = NULL;
  rc = rt_pg_open_store(spec, prefix, &store);
  if (rc)
    return rc == CORE_EUSAGE
               ? rc
               : core_err_wrap(rc, "process group rank %d of %d (rendezvous '%s')", info->rank, info->world_size, spec);
  rc = rt_gloo_connect(store, info->rank, info->world_size, bind, timeout_s, out);
  if (rc)
    core_err_wrap(rc, "process group rank %d of %d (rendezvous '%s', timeout %g s)", info->rank, info->world_size, spec,
        timeout_s);
  /* The mesh is connected; the store was only needed to find the peers. */
  rt_store_close(store);
  return rc;
}
