# Sourced by the bench/validate-*.sh scripts: how much CPU time the
# hypervisor took from this machine (the "steal" column of /proc/stat, see
# proc(5)) while something ran. On a shared virtual machine it is the noise
# that no model of this machine can predict: a run with a fifth of its CPU
# stolen is slower for reasons outside the job.
#
#   s0=$(steal_snap); ...run...; steal_frac "$s0"    # prints e.g. 0.0213

steal_snap() { # prints "STEAL TOTAL" jiffies of all CPUs
  awk '/^cpu / { t = 0; for (i = 2; i <= 9; i++) t += $i; print $9, t; exit }' /proc/stat
}

steal_frac() { # SNAP -> fraction of CPU time stolen since SNAP
  local now
  now=$(steal_snap)
  awk -v a="$1" -v b="$now" 'BEGIN { split(a, x, " "); split(b, y, " ");
    printf "%.4f\n", (y[2] > x[2] ? (y[1] - x[1]) / (y[2] - x[2]) : 0) }'
}
