/* sysstat — CPU, memory, network and GPU figures of a rank (runtime/sysstat.h). */
#include "runtime/sysstat.h"

#include "runtime/nvml_api.h"

#include "core/clock.h"
#include "core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

struct rt_sysmon {
  double t, cpu_s;           /* at the last sample */
  unsigned long long rx, tx; /* bytes, at the last sample */
  int has_net;
  const rt_nvml *nvml; /* NULL: no GPU figures */
  rt_nvml_device dev;
};

static double cpu_seconds(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0)
    return 0;
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec * 1e-6;
}

/* Bytes received and sent by every interface of this network namespace.
 * /proc/net/dev: two header lines, then "name: rx_bytes rx_packets ... (8
 * receive fields) tx_bytes ..." (the kernel's dev_seq_printf_stats). */
static int net_bytes(unsigned long long *rx, unsigned long long *tx) {
  FILE *f = fopen("/proc/self/net/dev", "r");
  if (!f)
    return -1;
  char line[512];
  int n = 0;
  *rx = *tx = 0;
  while (fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    unsigned long long r, skip, t;
    if (!colon || sscanf(colon + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &r, &skip, &skip, &skip, &skip,
                      &skip, &skip, &skip, &t) != 9)
      continue;
    *rx += r;
    *tx += t;
    n++;
  }
  fclose(f);
  return n > 0 ? 0 : -1;
}

static double rss_mib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long long size, resident;
  int ok = f && fscanf(f, "%llu %llu", &size, &resident) == 2;
  if (f)
    fclose(f);
  return ok ? (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0) : 0.0;
}

static void open_gpu(rt_sysmon *m, int gpu, char *why, int why_len) {
  const rt_nvml *api;
  int rc = rt_nvml_load(&api);
  if (!rc)
    rc = rt_nvml_open_device(api, gpu, &m->dev);
  if (rc) {
    if (why)
      snprintf(why, (size_t)why_len, "%s", core_err_msg());
    core_err_clear();
    return;
  }
  m->nvml = api;
}

int rt_sysmon_open(int gpu, rt_sysmon **out, char *gpu_why, int why_len) {
  rt_sysmon *m = calloc(1, sizeof *m);
  if (!m)
    return core_err_set(CORE_ENOMEM, "out of memory for the system sampler");
  if (gpu_why && why_len > 0)
    gpu_why[0] = 0;
  m->t = core_now();
  m->cpu_s = cpu_seconds();
  m->has_net = net_bytes(&m->rx, &m->tx) == 0;
  if (gpu >= 0)
    open_gpu(m, gpu, gpu_why, why_len);
  *out = m;
  return 0;
}

static void sample_gpu(rt_sysmon *m, rt_sysstat *s) {
  rt_nvml_utilization u;
  rt_nvml_memory mem;
  if (m->nvml->nvmlDeviceGetUtilizationRates(m->dev, &u) != 0 || m->nvml->nvmlDeviceGetMemoryInfo(m->dev, &mem) != 0)
    return;
  s->has_gpu = 1;
  s->gpu_pct = u.gpu;
  s->gpu_mem_mib = (double)mem.used / (1024.0 * 1024.0);
}

void rt_sysmon_sample(rt_sysmon *m, rt_sysstat *s) {
  memset(s, 0, sizeof *s);
  double t = core_now(), cpu = cpu_seconds(), dt = t - m->t;
  s->cpu_pct = dt > 0 ? 100.0 * (cpu - m->cpu_s) / dt : 0.0;
  s->rss_mib = rss_mib();
  unsigned long long rx, tx;
  if (m->has_net && net_bytes(&rx, &tx) == 0) {
    s->has_net = 1;
    /* An interface that went away takes its counters with it: no negative rate. */
    s->rx_gbps = dt > 0 && rx >= m->rx ? (double)(rx - m->rx) * 8e-9 / dt : 0.0;
    s->tx_gbps = dt > 0 && tx >= m->tx ? (double)(tx - m->tx) * 8e-9 / dt : 0.0;
    m->rx = rx;
    m->tx = tx;
  }
  if (m->nvml)
    sample_gpu(m, s);
  m->t = t;
  m->cpu_s = cpu;
}

void rt_sysmon_free(rt_sysmon *m) {
  if (!m)
    return;
  if (m->nvml)
    rt_nvml_close(m->nvml);
  free(m);
}
