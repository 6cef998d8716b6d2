# Sourced by the bench/validate-*.sh scripts: how much CPU time the
# hypervisor took from this machine (the "steal" column of /proc/stat, see
# proc(5)) while something ran. On a shared virtual machine it is the noise
# that no model of this machine can predict: a run with a fifth of its CPU
# stolen is slower for reasons outside the job.
#
#   steal_wait; s0=$(steal_snap); ...run...; steal_frac "$s0"   # e.g. 0.0213

steal_snap() { # prints "STEAL TOTAL" jiffies of all CPUs
  awk '/^cpu / { t = 0; for (i = 2; i <= 9; i++) t += $i; print $9, t; exit }' /proc/stat
}

steal_frac() { # SNAP -> fraction of CPU time stolen since SNAP
  local now
  now=$(steal_snap)
  awk -v a="$1" -v b="$now" 'BEGIN { split(a, x, " "); split(b, y, " ");
    printf "%.4f\n", (y[2] > x[2] ? (y[1] - x[1]) / (y[2] - x[2]) : 0) }'
}

# Wait until the hypervisor took under STEAL_MAX (default 0.03) of the CPU
# over the last second; give up after STEAL_WAIT_S (default 120) seconds and
# go on, saying so on stderr (STEAL_WAIT_S=0: do not wait at all). The decision is taken before a measurement,
# never from its result, so it selects quiet spells, not good figures.
steal_wait() {
  local t0 s0 f
  [ "${STEAL_WAIT_S:-120}" -gt 0 ] || return 0
  t0=$(date +%s)
  while :; do
    s0=$(steal_snap)
    sleep 1
    f=$(steal_frac "$s0")
    if awk -v f="$f" -v m="${STEAL_MAX:-0.03}" 'BEGIN { exit !(f < m) }'; then
      return 0
    fi
    if (($(date +%s) - t0 >= ${STEAL_WAIT_S:-120})); then
      echo "   (the hypervisor still takes $f of the CPU after ${STEAL_WAIT_S:-120} s; measuring anyway)" >&2
      return 0
    fi
  done
}
