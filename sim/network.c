#include "network.h"

#include "core/cfg.h"
#include "core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const keys[] = {"name", "gbps", "latency_us", "nics_per_node", "efficiency", "oversubscription",
    "from_profile", "node_hour_usd", NULL};

static const char *where(const config_setting_t *s, char *buf) { return core_cfg_where(s, buf, 4200); }

static int parse_name(const config_setting_t *g, int anonymous, sim_network *n) {
  char w[4200];
  const char *name;
  int rc = core_cfg_string(g, "name", !anonymous, "network", NULL, &name);
  if (rc)
    return rc;
  if (strlen(name) >= sizeof n->name)
    return core_err_set(CORE_EINVAL, "%s: network name '%.20s...' is longer than %zu characters", where(g, w), name,
        sizeof n->name - 1);
  if (strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-") != strlen(name))
    return core_err_set(CORE_EINVAL,
        "%s: network name \"%s\" may use only letters, digits and . _ + - (it labels CSV rows and plots)",
        where(config_setting_get_member(g, "name"), w), name);
  snprintf(n->name, sizeof n->name, "%s", name);
  return 0;
}

/* The measured link as it is, or rescaled to another line rate (gbps):
 * same latency and efficiency, bandwidth in proportion. */
static int parse_measured(const config_setting_t *g, const core_profile *pr, const char *profile_path, sim_network *n) {
  char w[4200];
  int rc;
  for (const char *const *k = keys + 1; *k; k++)
    if (strcmp(*k, "from_profile") && strcmp(*k, "gbps") && strcmp(*k, "node_hour_usd") &&
        config_setting_get_member(g, *k))
      return core_err_set(CORE_EINVAL,
          "%s: network '%s' takes its link from the profile, so '%s' does not apply; remove it (only gbps may rescale "
          "the measured link) or set from_profile = false",
          where(config_setting_get_member(g, *k), w), n->name, *k);
  if ((rc = core_cfg_double(g, "gbps", 0, 0, 1e-3, 1e5, &n->gbps)) != 0)
    return rc;
  if (n->gbps > 0 && !(pr->link_gbps > 0))
    return core_err_set(CORE_EINVAL,
        "%s: network '%s' rescales the measured link to %g Gb/s, but profile '%s' does not say the line rate it was "
        "measured at (meta.link_gbps); calibrate with --link-gbps, or drop gbps",
        where(config_setting_get_member(g, "gbps"), w), n->name, n->gbps, profile_path);
  n->nics_per_node = 1;
  n->efficiency = 1;
  n->oversubscription = 1;
  return 0;
}

int sim_network_parse(
    const config_setting_t *g, const core_profile *pr, const char *profile_path, int anonymous, sim_network *n) {
  long long v;
  int rc;
  memset(n, 0, sizeof *n);
  n->line = (int)config_setting_source_line(g);
  if ((rc = core_cfg_check_keys(g, keys, "a network")) != 0 || (rc = parse_name(g, anonymous, n)) != 0 ||
      (rc = core_cfg_bool(g, "from_profile", 0, 0, &n->from_profile)) != 0 ||
      (rc = core_cfg_double(g, "node_hour_usd", 0, 0, 0, 1e9, &n->node_hour_usd)) != 0)
    return rc;
  n->priced = config_setting_get_member(g, "node_hour_usd") != NULL;
  if (n->from_profile)
    return parse_measured(g, pr, profile_path, n);
  /* Line rates from 1 Mb/s to 100 Tb/s; latency up to a second; the
   * profile's NICs per node unless the network says. */
  int nics = pr && pr->nics_per_node > 0 && pr->nics_per_node <= 64 ? pr->nics_per_node : 1;
  if ((rc = core_cfg_double(g, "gbps", 1, 0, 1e-3, 1e5, &n->gbps)) != 0 ||
      (rc = core_cfg_double(g, "latency_us", 1, 0, 0, 1e6, &n->latency_us)) != 0 ||
      (rc = core_cfg_int(g, "nics_per_node", 0, nics, 1, 64, &v)) != 0)
    return rc;
  n->nics_per_node = (int)v;
  /* Default efficiency: TCP payload per Ethernet frame at MTU 1500 with
   * timestamps, 1448 of 1538 bytes on the wire (IEEE 802.3 framing: 38 bytes
   * of preamble, header, FCS and gap; 52 bytes of IP and TCP headers). */
  return (rc = core_cfg_double(g, "efficiency", 0, 1448.0 / 1538.0, 0.01, 1.0, &n->efficiency)) != 0
             ? rc
             : core_cfg_double(g, "oversubscription", 0, 1.0, 1.0, 1000.0, &n->oversubscription);
}

int sim_network_parse_list(
    const config_setting_t *list, const core_profile *pr, const char *profile_path, sim_network **out, int *count) {
  char w[4200];
  int n = config_setting_length(list), rc;
  sim_network *nets = calloc((size_t)n, sizeof *nets);
  *out = NULL;
  *count = 0;
  if (!nets)
    return core_err_set(CORE_ENOMEM, "out of memory reading networks");
  for (int i = 0; i < n; i++) {
    const config_setting_t *g = config_setting_get_elem(list, (unsigned)i);
    if ((rc = sim_network_parse(g, pr, profile_path, 0, &nets[i])) != 0)
      goto fail;
    for (int j = 0; j < i; j++)
      if (strcmp(nets[j].name, nets[i].name) == 0) {
        rc = core_err_set(CORE_EINVAL, "%s: network name '%s' is already used at line %d; names must be unique",
            where(g, w), nets[i].name, nets[j].line);
        goto fail;
      }
  }
  *out = nets;
  *count = n;
  return 0;
fail:
  free(nets);
  return rc;
}
