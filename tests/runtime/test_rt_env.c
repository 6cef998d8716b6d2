/* Process-group identity from the environment (torchrun, Slurm, Open MPI),
 * rendezvous specs, default bind address, and the comm.h name helpers.
 * These tests set the real environment of this process. */
#include <CUnit/CUnit.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/err.h"
#include "runtime/comm.h"
#include "runtime/pg.h"
#include "rtt.h"

static const char *const all_vars[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
    "MASTER_ADDR", "MASTER_PORT", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_LOCALID", "SLURM_NODEID",
    "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_STEP_TASKS_PER_NODE", "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"};

static void clear_env(void) {
  for (size_t i = 0; i < sizeof all_vars / sizeof all_vars[0]; i++)
    unsetenv(all_vars[i]);
}

/* Set NAME, VALUE pairs; NULL ends the list. */
static void set_env(const char *first, ...) {
  va_list ap;
  va_start(ap, first);
  for (const char *k = first; k; k = va_arg(ap, const char *)) {
    const char *v = va_arg(ap, const char *);
    setenv(k, v, 1);
  }
  va_end(ap);
}

/* Expect rt_pg_from_env to fail with code and a message containing every
 * given fragment (the variable's name as it appears, e.g. "RANK='abc'"). */
static void expect_env_error(int code, const char *frag1, const char *frag2) {
  rt_pg_info info;
  core_err_clear();
  int rc = rt_pg_from_env(&info);
  CU_ASSERT_EQUAL(rc, code);
  const char *m = core_err_msg();
  if (frag1 && !strstr(m, frag1)) {
    fprintf(stderr, "\nmessage lacks '%s': %s\n", frag1, m);
    CU_FAIL("error message does not name the variable");
  }
  if (frag2 && !strstr(m, frag2)) {
    fprintf(stderr, "\nmessage lacks '%s': %s\n", frag2, m);
    CU_FAIL("error message does not say what to set");
  }
}

static void test_single_process(void) {
  clear_env();
  rt_pg_info in;
  CU_ASSERT_EQUAL_FATAL(rt_pg_from_env(&in), 0);
  CU_ASSERT_EQUAL(in.rank, 0);
  CU_ASSERT_EQUAL(in.world_size, 1);
  CU_ASSERT_EQUAL(in.local_rank, 0);
  CU_ASSERT_EQUAL(in.local_world_size, 1);
  CU_ASSERT_EQUAL(in.node_rank, 0);
  CU_ASSERT_STRING_EQUAL(in.master_addr, "");
  CU_ASSERT_EQUAL(in.master_port, 0);
  CU_ASSERT_STRING_EQUAL(in.source, "single");
}

static void test_torchrun(void) {
  clear_env();
  set_env("RANK", "5", "WORLD_SIZE", "8", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "4", "GROUP_RANK", "1", "MASTER_ADDR",
      "node-a.example", "MASTER_PORT", "29500", NULL);
  rt_pg_info in;
  CU_ASSERT_EQUAL_FATAL(rt_pg_from_env(&in), 0);
  CU_ASSERT_EQUAL(in.rank, 5);
  CU_ASSERT_EQUAL(in.world_size, 8);
  CU_ASSERT_EQUAL(in.local_rank, 1);
  CU_ASSERT_EQUAL(in.local_world_size, 4);
  CU_ASSERT_EQUAL(in.node_rank, 1);
  CU_ASSERT_STRING_EQUAL(in.master_addr, "node-a.example");
  CU_ASSERT_EQUAL(in.master_port, 29500);
  CU_ASSERT_STRING_EQUAL(in.source, "torchrun");

  /* No GROUP_RANK: nodes are filled in rank order. */
  unsetenv("GROUP_RANK");
  set_env("RANK", "6", "LOCAL_RANK", "2", NULL);
  CU_ASSERT_EQUAL_FATAL(rt_pg_from_env(&in), 0);
  CU_ASSERT_EQUAL(in.node_rank, 1);

  /* No LOCAL_*: one node holds every rank. */
  clear_env();
  set_env("RANK", "2", "WORLD_SIZE", "3", NULL);
  CU_ASSERT_EQUAL_FATAL(rt_pg_from_env(&in), 0);
  CU_ASSERT_EQUAL(in.local_rank, 2);
  CU_ASSERT_EQUAL(in.local_world_size, 3);
  CU_ASSERT_EQUAL(in.node_rank, 0);
  CU_ASSERT_STRING_EQUAL(in.master_addr, "");
  clear_env();
}

static void test_slurm(void) {
  clear_env();
  set_env("SLURM_PROCID", "3", "SLURM_NTASKS", "4", "SLURM_LOCALID", "1", "SLURM_NODEID", "1", "SLURM_NTASKS_PER_NODE",
      "2", "MASTER_ADDR", "10.1.2.3", NULL);
  rt_pg_info in;
  CU_ASSERT_EQUAL_FATAL(rt_pg_from_env(&in), 0);
  CU_ASSERT_EQUAL(in.rank, 3);
  CU_ASSERT_EQUAL(in.world_size, 4);
  CU_ASSERT_EQUAL(in.local_rank, 1);
  CU_ASSERT_EQUAL(in.local_world_size, 2);
  CU_ASSERT_EQUAL(in.node_rank, 1);
  CU_ASSERT_STRING_EQUAL(in.master_addr, "10.1.2.3");
  CU_ASSERT_STRING_EQUAL(in.source, "slurm");

  /* Uneven nodes: SLURM_TASKS_PER_NODE's compressed list. */
  clear_env();
  set_env("SLURM_PROCID", "6", "SLURM_NTASKS", "7", "SLURM_LOCALID", "0", "SLURM_NODEID", "3", "SLURM_TASKS_PER_NODE",
      "2(x3),1", NULL);
  CU_ASSERT_EQUAL_FATAL(rt_pg_from_env(&in), 0);
  CU_ASSERT_EQUAL(in.local_world_size, 1);
  CU_ASSERT_EQUAL(in.node_rank, 3);
  set_env("SLURM_PROCID", "3", "SLURM_LOCALID", "1", "SLURM_NODEID", "1", NULL);
  CU_ASSERT_EQUAL_FATAL(rt_pg_from_env(&in), 0);
  CU_ASSERT_EQUAL(in.local_world_size, 2);

  /* The step's own list wins over the job's --ntasks-per-node. */
  clear_env();
  set_env("SLURM_PROCID", "2", "SLURM_NTASKS", "4", "SLURM_LOCALID", "2", "SLURM_NODEID", "0",
      "SLURM_STEP_TASKS_PER_NODE", "3,1", "SLURM_NTASKS_PER_NODE", "2", NULL);
  CU_ASSERT_EQUAL_FATAL(rt_pg_from_env(&in), 0);
  CU_ASSERT_EQUAL(in.local_world_size, 3);
  CU_ASSERT_EQUAL(in.local_rank, 2);

  /* SLURM_NPROCS is the older name of SLURM_NTASKS. */
  clear_env();
  set_env("SLURM_PROCID", "1", "SLURM_NPROCS", "2", NULL);
  CU_ASSERT_EQUAL_FATAL(rt_pg_from_env(&in), 0);
  CU_ASSERT_EQUAL(in.world_size, 2);
  CU_ASSERT_EQUAL(in.local_rank, 1);
  clear_env();
}

static void test_openmpi(void) {
  clear_env();
  set_env("OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_RANK", "0",
      "OMPI_COMM_WORLD_LOCAL_SIZE", "2", "MASTER_PORT", "1234", NULL);
  rt_pg_info in;
  CU_ASSERT_EQUAL_FATAL(rt_pg_from_env(&in), 0);
  CU_ASSERT_EQUAL(in.rank, 2);
  CU_ASSERT_EQUAL(in.world_size, 4);
  CU_ASSERT_EQUAL(in.local_rank, 0);
  CU_ASSERT_EQUAL(in.local_world_size, 2);
  CU_ASSERT_EQUAL(in.node_rank, 1);
  CU_ASSERT_EQUAL(in.master_port, 1234);
  CU_ASSERT_STRING_EQUAL(in.source, "openmpi");
  clear_env();
}

static void test_precedence(void) {
  rt_pg_info in;
  /* torchrun inside an srun allocation: torchrun's variables describe this
   * process (Slurm's describe the torchrun agent). */
  clear_env();
  set_env("RANK", "1", "WORLD_SIZE", "2", "SLURM_PROCID", "0", "SLURM_NTASKS", "1", "OMPI_COMM_WORLD_RANK", "0",
      "OMPI_COMM_WORLD_SIZE", "1", NULL);
  CU_ASSERT_EQUAL_FATAL(rt_pg_from_env(&in), 0);
  CU_ASSERT_STRING_EQUAL(in.source, "torchrun");
  CU_ASSERT_EQUAL(in.rank, 1);
  CU_ASSERT_EQUAL(in.world_size, 2);

  clear_env();
  set_env("SLURM_PROCID", "2", "SLURM_NTASKS", "3", "OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "1", NULL);
  CU_ASSERT_EQUAL_FATAL(rt_pg_from_env(&in), 0);
  CU_ASSERT_STRING_EQUAL(in.source, "slurm");
  CU_ASSERT_EQUAL(in.rank, 2);

  /* A bad torchrun variable is an error, not a reason to fall back. */
  clear_env();
  set_env("RANK", "x", "WORLD_SIZE", "2", "SLURM_PROCID", "0", "SLURM_NTASKS", "2", NULL);
  expect_env_error(CORE_EINVAL, "RANK='x'", "set RANK");
  clear_env();
}

static void test_bad_torchrun(void) {
  clear_env();
  set_env("RANK", "abc", "WORLD_SIZE", "4", NULL);
  expect_env_error(CORE_EINVAL, "RANK='abc'", "set RANK");
  set_env("RANK", "1x", NULL);
  expect_env_error(CORE_EINVAL, "RANK='1x'", NULL);
  set_env("RANK", "", NULL);
  expect_env_error(CORE_EINVAL, "RANK=''", NULL);
  set_env("RANK", "99999999999999999999", NULL);
  expect_env_error(CORE_EINVAL, "RANK='99999999999999999999'", NULL);
  set_env("RANK", "-1", NULL);
  expect_env_error(CORE_EINVAL, "RANK=-1", "out of range");
  set_env("RANK", "4", NULL);
  expect_env_error(CORE_EINVAL, "RANK=4 is not below WORLD_SIZE=4", NULL);
  set_env("RANK", "1", "WORLD_SIZE", "0", NULL);
  expect_env_error(CORE_EINVAL, "WORLD_SIZE=0", "set WORLD_SIZE");
  set_env("WORLD_SIZE", "two", NULL);
  expect_env_error(CORE_EINVAL, "WORLD_SIZE='two'", "set WORLD_SIZE");

  clear_env();
  set_env("RANK", "0", NULL);
  expect_env_error(CORE_EINVAL, "WORLD_SIZE is not set", "set WORLD_SIZE");
  clear_env();
  set_env("WORLD_SIZE", "2", NULL);
  expect_env_error(CORE_EINVAL, "RANK is not set", "set RANK");
  clear_env();
  set_env("LOCAL_RANK", "0", NULL);
  expect_env_error(CORE_EINVAL, "WORLD_SIZE is not set", NULL);

  clear_env();
  set_env("RANK", "1", "WORLD_SIZE", "4", "LOCAL_RANK", "1", NULL);
  expect_env_error(CORE_EINVAL, "LOCAL_RANK is set but LOCAL_WORLD_SIZE is not", "set both");
  set_env("LOCAL_WORLD_SIZE", "1", NULL);
  expect_env_error(CORE_EINVAL, "LOCAL_RANK=1 is not below LOCAL_WORLD_SIZE=1", NULL);
  set_env("LOCAL_WORLD_SIZE", "8", NULL);
  expect_env_error(CORE_EINVAL, "LOCAL_WORLD_SIZE=8 exceeds WORLD_SIZE=4", NULL);
  set_env("LOCAL_WORLD_SIZE", "2", "LOCAL_RANK", "z", NULL);
  expect_env_error(CORE_EINVAL, "LOCAL_RANK='z'", "set LOCAL_RANK");
  set_env("LOCAL_RANK", "1", "GROUP_RANK", "-3", NULL);
  expect_env_error(CORE_EINVAL, "GROUP_RANK=-3", NULL);
  clear_env();
}

static void test_bad_master(void) {
  clear_env();
  set_env("MASTER_PORT", "70000", NULL);
  expect_env_error(CORE_EINVAL, "MASTER_PORT=70000", "set MASTER_PORT");
  set_env("MASTER_PORT", "http", NULL);
  expect_env_error(CORE_EINVAL, "MASTER_PORT='http'", "set MASTER_PORT");
  set_env("MASTER_PORT", "0", NULL);
  expect_env_error(CORE_EINVAL, "MASTER_PORT=0", NULL);
  clear_env();
  set_env("MASTER_ADDR", "", NULL);
  expect_env_error(CORE_EINVAL, "MASTER_ADDR is empty", NULL);
  clear_env();
}

static void test_bad_slurm(void) {
  clear_env();
  set_env("SLURM_PROCID", "2", NULL);
  expect_env_error(CORE_EINVAL, "SLURM_NTASKS is not set", "srun");
  set_env("SLURM_PROCID", "x", "SLURM_NTASKS", "4", NULL);
  expect_env_error(CORE_EINVAL, "SLURM_PROCID='x'", "srun");
  set_env("SLURM_PROCID", "4", NULL);
  expect_env_error(CORE_EINVAL, "SLURM_PROCID=4 is not below SLURM_NTASKS=4", NULL);
  set_env("SLURM_PROCID", "1", "SLURM_NTASKS", "-2", NULL);
  expect_env_error(CORE_EINVAL, "SLURM_NTASKS=-2", NULL);
  set_env("SLURM_NTASKS", "4", "SLURM_LOCALID", "0", "SLURM_NODEID", "0", "SLURM_TASKS_PER_NODE", "2(y3)", NULL);
  expect_env_error(CORE_EINVAL, "SLURM_TASKS_PER_NODE='2(y3)'", "SLURM_NTASKS_PER_NODE");
  set_env("SLURM_TASKS_PER_NODE", "2", "SLURM_NODEID", "5", NULL);
  expect_env_error(CORE_EINVAL, "SLURM_NODEID=5", NULL);
  set_env("SLURM_NODEID", "0", "SLURM_NTASKS_PER_NODE", "2", "SLURM_LOCALID", "2", NULL);
  expect_env_error(CORE_EINVAL, "SLURM_LOCALID=2 is not below SLURM_NTASKS_PER_NODE=2", NULL);
  clear_env();
  set_env("SLURM_PROCID", "1", "SLURM_NTASKS", "4", "SLURM_LOCALID", "1", NULL);
  expect_env_error(CORE_EINVAL, "SLURM_NTASKS_PER_NODE", NULL);
  clear_env();
}

static void test_bad_openmpi(void) {
  clear_env();
  set_env("OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "3", NULL);
  expect_env_error(CORE_EINVAL, "OMPI_COMM_WORLD_RANK=3 is not below OMPI_COMM_WORLD_SIZE=3", NULL);
  set_env("OMPI_COMM_WORLD_SIZE", "abc", NULL);
  expect_env_error(CORE_EINVAL, "OMPI_COMM_WORLD_SIZE='abc'", "mpirun");
  clear_env();
  set_env("OMPI_COMM_WORLD_RANK", "0", NULL);
  expect_env_error(CORE_EINVAL, "OMPI_COMM_WORLD_SIZE is not set", "mpirun");
  set_env("OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_LOCAL_RANK", "0", NULL);
  expect_env_error(CORE_EINVAL, "OMPI_COMM_WORLD_LOCAL_SIZE is not", "set both");
  set_env("OMPI_COMM_WORLD_LOCAL_SIZE", "1", "OMPI_COMM_WORLD_LOCAL_RANK", "1", NULL);
  expect_env_error(CORE_EINVAL, "OMPI_COMM_WORLD_LOCAL_RANK=1 is not below OMPI_COMM_WORLD_LOCAL_SIZE=1", NULL);
  clear_env();
}

/* ---- specs ----------------------------------------------------------- */

static void test_spec_forms(void) {
  rt_pg_spec s;
  CU_ASSERT_EQUAL_FATAL(rt_pg_parse_spec("file:///shared/rdv", &s), 0);
  CU_ASSERT_EQUAL(s.kind, RT_PG_STORE_FILE);
  CU_ASSERT_STRING_EQUAL(s.path, "/shared/rdv");
  CU_ASSERT_EQUAL_FATAL(rt_pg_parse_spec("/shared/rdv", &s), 0);
  CU_ASSERT_EQUAL(s.kind, RT_PG_STORE_FILE);
  CU_ASSERT_STRING_EQUAL(s.path, "/shared/rdv");
  CU_ASSERT_EQUAL_FATAL(rt_pg_parse_spec("./rdv", &s), 0);
  CU_ASSERT_STRING_EQUAL(s.path, "./rdv");

  /* A bare relative name is a directory only if it exists. */
  char dir[512];
  CU_ASSERT_EQUAL_FATAL(rtt_mkdtemp(dir, sizeof dir), 0);
  char old[4096];
  CU_ASSERT_PTR_NOT_NULL_FATAL(getcwd(old, sizeof old));
  CU_ASSERT_EQUAL_FATAL(chdir(dir), 0);
  CU_ASSERT_EQUAL(mkdir("rdv", 0700), 0);
  CU_ASSERT_EQUAL(rt_pg_parse_spec("rdv", &s), 0);
  CU_ASSERT_STRING_EQUAL(s.path, "rdv");
  CU_ASSERT_EQUAL(rt_pg_parse_spec("not-there", &s), CORE_EUSAGE);
  rmdir("rdv");
  CU_ASSERT_EQUAL(chdir(old), 0);
  rtt_rmdir(dir);

  CU_ASSERT_EQUAL_FATAL(rt_pg_parse_spec("redis://10.0.0.5:7000", &s), 0);
  CU_ASSERT_EQUAL(s.kind, RT_PG_STORE_REDIS);
  CU_ASSERT_STRING_EQUAL(s.host, "10.0.0.5");
  CU_ASSERT_EQUAL(s.port, 7000);
  CU_ASSERT_EQUAL_FATAL(rt_pg_parse_spec("redis://cache.example", &s), 0);
  CU_ASSERT_STRING_EQUAL(s.host, "cache.example");
  CU_ASSERT_EQUAL(s.port, 6379);
  CU_ASSERT_EQUAL_FATAL(rt_pg_parse_spec("redis://[::1]:6380", &s), 0);
  CU_ASSERT_STRING_EQUAL(s.host, "::1");
  CU_ASSERT_EQUAL(s.port, 6380);
}

static void test_spec_bad(void) {
  static const char *const bad[] = {"", "tcp://host:1", "redis://", "redis://:6379", "redis://h:0", "redis://h:65536",
      "redis://h:abc", "redis://h:1/x", "redis://[::1", "file://", "env://", "no-such-dir-here"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    rt_pg_spec s;
    core_err_clear();
    int rc = rt_pg_parse_spec(bad[i], &s);
    if (rc != CORE_EUSAGE)
      fprintf(stderr, "\nspec '%s' gave %d\n", bad[i], rc);
    CU_ASSERT_EQUAL(rc, CORE_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "accepted forms"));
    CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "redis://HOST:PORT"));
  }
  /* rt_pg_connect refuses a bad spec before any networking. */
  rt_pg_info in;
  memset(&in, 0, sizeof in);
  in.world_size = 1;
  in.local_world_size = 1;
  rt_comm *c = (rt_comm *)0x1;
  CU_ASSERT_EQUAL(rt_pg_connect(&in, "tcp://127.0.0.1:1", "127.0.0.1", 2, "p", &c), CORE_EUSAGE);
  CU_ASSERT_PTR_NULL(c);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "tcp://127.0.0.1:1"));
}

static void test_default_bind(void) {
  rt_pg_info in;
  memset(&in, 0, sizeof in);
  in.world_size = 4;
  in.local_world_size = 4;
  char b[64];
  CU_ASSERT_EQUAL(rt_pg_default_bind(&in, b, sizeof b), 0);
  CU_ASSERT_STRING_EQUAL(b, "127.0.0.1");
  /* Routing towards a loopback master picks the loopback address. */
  strcpy(in.master_addr, "127.0.0.1");
  in.local_world_size = 2;
  CU_ASSERT_EQUAL(rt_pg_default_bind(&in, b, sizeof b), 0);
  CU_ASSERT_STRING_EQUAL(b, "127.0.0.1");
  /* Spanning nodes with no MASTER_ADDR: nothing to route by. */
  in.master_addr[0] = '\0';
  CU_ASSERT_EQUAL(rt_pg_default_bind(&in, b, sizeof b), CORE_EUSAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "MASTER_ADDR"));
}

/* ---- comm.h helpers ---------------------------------------------------- */

static void test_dtype_algo_names(void) {
  CU_ASSERT_EQUAL(rt_dtype_size(RT_FP32), 4);
  CU_ASSERT_EQUAL(rt_dtype_size(RT_FP16), 2);
  CU_ASSERT_EQUAL(rt_dtype_size(RT_BF16), 2);
  CU_ASSERT_EQUAL(rt_dtype_size((enum rt_dtype)7), 0);
  for (int t = RT_FP32; t <= RT_BF16; t++) {
    enum rt_dtype back;
    CU_ASSERT_EQUAL(rt_dtype_parse(rt_dtype_name((enum rt_dtype)t), &back), 0);
    CU_ASSERT_EQUAL(back, t);
  }
  enum rt_dtype d;
  CU_ASSERT_EQUAL(rt_dtype_parse("bfloat16", &d), 0);
  CU_ASSERT_EQUAL(d, RT_BF16);
  CU_ASSERT_EQUAL(rt_dtype_parse("fp8", &d), CORE_EINVAL);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "fp8"));
  CU_ASSERT_EQUAL(rt_dtype_parse(NULL, &d), CORE_EINVAL);
  CU_ASSERT_STRING_EQUAL(rt_dtype_name((enum rt_dtype)9), "unknown");

  for (int a = 0; a < RT_N_ALGOS; a++) {
    enum rt_algo back;
    CU_ASSERT_EQUAL(rt_algo_parse(rt_algo_name((enum rt_algo)a), &back), 0);
    CU_ASSERT_EQUAL(back, a);
  }
  CU_ASSERT_STRING_EQUAL(rt_algo_name(RT_ALGO_HALVING_DOUBLING), "halving_doubling");
  enum rt_algo a;
  CU_ASSERT_EQUAL(rt_algo_parse("butterfly", &a), CORE_EINVAL);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "butterfly"));
  CU_ASSERT_STRING_EQUAL(rt_algo_name(RT_N_ALGOS), "unknown");
}

void test_register(void) {
  CU_pSuite env = CU_add_suite("env", NULL, NULL);
  CU_add_test(env, "no variables: rank 0 of 1", test_single_process);
  CU_add_test(env, "torchrun", test_torchrun);
  CU_add_test(env, "slurm", test_slurm);
  CU_add_test(env, "openmpi", test_openmpi);
  CU_add_test(env, "precedence torchrun > slurm > openmpi", test_precedence);
  CU_add_test(env, "bad torchrun values", test_bad_torchrun);
  CU_add_test(env, "bad MASTER_ADDR/MASTER_PORT", test_bad_master);
  CU_add_test(env, "bad slurm values", test_bad_slurm);
  CU_add_test(env, "bad openmpi values", test_bad_openmpi);
  CU_pSuite spec = CU_add_suite("spec", NULL, NULL);
  CU_add_test(spec, "accepted forms", test_spec_forms);
  CU_add_test(spec, "bad specs are usage errors", test_spec_bad);
  CU_add_test(spec, "default bind address", test_default_bind);
  CU_pSuite names = CU_add_suite("names", NULL, NULL);
  CU_add_test(names, "dtype and algorithm names", test_dtype_algo_names);
}
