#include "colltime.h"

#include "sim/predict.h"

#include "core/err.h"

#include <string.h>

/* The profile's entry for op measured on exactly this many ranks and nodes
 * (any algorithm: nccl-tests does not say which NCCL chose). */
static const core_prof_coll *same_shape(
    const core_profile *pr, enum sim_backend b, enum core_coll op, int nodes, int per_node) {
  for (int i = 0; i < pr->n_colls; i++) {
    const core_prof_coll *c = &pr->colls[i];
    if (!strcmp(c->backend, sim_backend_name(b)) && !strcmp(c->op, core_coll_name(op)) && c->nodes == nodes &&
        c->ranks == nodes * per_node && c->n_fits > 0)
      return c;
  }
  return NULL;
}

int sim_colltime_setup(const core_profile *pr, const char *profile_path, const sim_network *n, enum sim_backend b,
    enum core_coll op, int algo, int nodes, int per_node, sim_colltime *c) {
  memset(c, 0, sizeof *c);
  c->backend = b;
  c->op = op;
  c->algo = algo;
  c->nodes = nodes;
  c->per_node = per_node;
  if (algo >= 0 && op == CORE_COLL_ALLREDUCE && !sim_algo_valid(b, (enum sim_algo)algo))
    return core_err_set(
        CORE_EINVAL, "%s has no allreduce algorithm '%s'", sim_backend_name(b), sim_algo_name((enum sim_algo)algo));
  if (algo >= 0 && op != CORE_COLL_ALLREDUCE && algo != SIM_ALGO_RING)
    return core_err_set(CORE_EINVAL, "%s runs as a ring; '%s' is an allreduce algorithm", core_coll_name(op),
        sim_algo_name((enum sim_algo)algo));
  /* The measurement stands for itself only on the network it was made on;
   * a datasheet profile's fit is Simple's model alone, so its shape too
   * goes to the models, which add NCCL's other protocols. */
  int measured_net = (nodes == 1 || (n->from_profile && !(n->gbps > 0))) && !core_profile_is_datasheet(pr);
  if (algo < 0 && measured_net && (c->measured = same_shape(pr, b, op, nodes, per_node)) != NULL)
    return 0;
  if (nodes * per_node < 2)
    return 0;
  return sim_topo_build(pr, profile_path, n, b, op, nodes, per_node, &c->topo);
}

double sim_colltime_at(const sim_colltime *c, double S) {
  if (c->measured) {
    const core_prof_fit *f = core_prof_coll_fit(c->measured, S);
    return f->alpha_us * 1e-6 + S / (f->algbw_GBps * 1e9);
  }
  if (c->algo >= 0 || c->op != CORE_COLL_ALLREDUCE)
    return sim_coll_time(c->backend, c->op, c->algo >= 0 ? (enum sim_algo)c->algo : SIM_ALGO_RING, &c->topo, S);
  sim_point p = {.backend = c->backend, .algorithm = -1};
  return sim_predict_allreduce(&p, &c->topo, S);
}
