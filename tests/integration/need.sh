# What an integration test needs before it starts, and whether its absence is
# a failure or a skip (sourced, not run). A skip exits 77, which ctest reports
# as "Skipped" (SKIP_RETURN_CODE), never as a pass.
#
#   need_tools NAME TOOL...   a tool scripts/setup.sh installs: missing as root
#                             (where setup could have installed it) fails, else skips
#   need_root NAME WHY        skips unless root
#   need_netns NAME           skips, with the kernel's reason, where network
#                             namespaces, veth pairs or tbf shaping are refused

need_tools() {
  local name=$1 t
  shift
  for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 && continue
    if [ "$(id -u)" -eq 0 ]; then
      echo "$name: FAIL: '$t' not found, though scripts/setup.sh installs it; run bash scripts/setup.sh" >&2
      exit 1
    fi
    echo "$name: SKIP: '$t' not found and not root to install it; run bash scripts/setup.sh"
    exit 77
  done
}

need_root() {
  [ "$(id -u)" -eq 0 ] && return 0
  echo "$1: SKIP: needs root ($2)"
  exit 77
}

# A throwaway namespace and veth pair with a tbf qdisc: what scripts/testbed.sh
# builds. A container without CAP_SYS_ADMIN / CAP_NET_ADMIN, or a kernel
# without sch_tbf, refuses one of them; the test then skips saying which.
need_netns() {
  local name=$1 probe="ddpsim-probe-$$" why=""
  need_tools "$name" ip tc
  if ! why=$(ip netns add "$probe" 2>&1); then
    echo "$name: SKIP: this kernel refuses network namespaces here (ip netns add: $why)"
    exit 77
  fi
  if ! why=$(ip link add "dp$$a" type veth peer name "dp$$b" 2>&1); then
    ip netns del "$probe" 2>/dev/null
    echo "$name: SKIP: this kernel refuses veth pairs here (ip link add: $why)"
    exit 77
  fi
  if ! why=$(tc qdisc add dev "dp$$a" root tbf rate 1gbit burst 64kb latency 5ms 2>&1); then
    ip link del "dp$$a" 2>/dev/null
    ip netns del "$probe" 2>/dev/null
    echo "$name: SKIP: this kernel refuses tbf shaping here (tc qdisc add: $why)"
    exit 77
  fi
  ip link del "dp$$a" 2>/dev/null || true
  ip netns del "$probe" 2>/dev/null || true
  return 0
}
