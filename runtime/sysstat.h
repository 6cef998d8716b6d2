/*
 * sysstat — what a training rank's machine is doing, sampled by the
 * TensorBoard logger (runtime/tblog.h) off the training thread: the
 * process's CPU utilisation (user + system time of all its threads over the
 * wall time since the last sample, in percent of one CPU, as top shows a
 * process), its resident memory (/proc/self/statm), the receive and
 * transmit rates of its network namespace (the byte counters of every
 * interface in /proc/self/net/dev, which is the namespace of the reading
 * process: a testbed host's veth, or the loopback that ranks of one
 * namespace share), and, when asked, one GPU's utilisation and memory in
 * use through NVML (runtime/nvml_api.h).
 */
#ifndef RUNTIME_SYSSTAT_H
#define RUNTIME_SYSSTAT_H

typedef struct rt_sysstat {
  double cpu_pct; /* percent of one CPU */
  double rss_mib; /* resident set, MiB */
  int has_net;
  double rx_gbps, tx_gbps; /* Gbit/s since the last sample */
  int has_gpu;
  double gpu_pct;     /* NVML utilization.gpu */
  double gpu_mem_mib; /* NVML memory used, MiB */
} rt_sysstat;

typedef struct rt_sysmon rt_sysmon;

/* Start measuring (the baseline of the first sample). gpu: the NVML device
 * index whose figures to add, or -1. A GPU that cannot be read does not
 * fail this: the sampler goes on without GPU figures and *gpu_why (when not
 * NULL) gets why, else an empty string. */
int rt_sysmon_open(int gpu, rt_sysmon **out, char *gpu_why, int why_len);
/* The figures since the previous sample (or the open). */
void rt_sysmon_sample(rt_sysmon *m, rt_sysstat *s);
void rt_sysmon_free(rt_sysmon *m);

#endif
