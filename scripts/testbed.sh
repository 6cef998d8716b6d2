#!/usr/bin/env bash
# ddpsim network testbed: K test hosts on one machine.
#
# Each test host is a network namespace NAME-hI (I = 1..K) with one interface,
# eth0, the namespace end of a veth pair whose other end (NAME-hI-b) is a port
# of the Linux bridge NAME-br in the root namespace. The bridge has no address:
# the root namespace is not part of the test network, so traffic only ever
# flows between test hosts. Every link is shaped with `tc tbf` to RATE in both
# directions (egress of eth0 inside the namespace = host -> switch, egress of
# NAME-hI-b on the bridge = switch -> host), like a host NIC and the switch
# port it plugs into.
#
# Address scheme (RFC 2544 benchmarking range 198.18.0.0/15, 512 /24 subnets):
#   subnet index S:  NAME "ddpsim" (the default)  -> S = 0
#                    any other NAME               -> S = 1 + (cksum(NAME) mod 511)
#   subnet           198.(18 + S/256).(S%256).0/24, host I has address .I
#   e.g. ddpsim-h1 = 198.18.0.1/24, ddpsim-h2 = 198.18.0.2/24, ...
# The index is a pure function of the name, so `addr` works before `up` and
# different names give different subnets. Two names whose checksums collide
# are detected at `up` (the bridge's ifalias records name and subnet) and the
# second `up` is refused with a message to pick another name.
#
# Shaping (see tbf_params below for the measurements behind it): tbf with
#   burst = max(128 KiB, 5 ms of RATE), limit = burst + 10 ms of RATE,
# GSO/TSO offloads left on (the bucket always holds whole GSO packets).
#
# Hosts on Docker-style machines: if br_netfilter is loaded and iptables'
# FORWARD policy is DROP, bridged traffic between test hosts is filtered too
# (net.bridge.bridge-nf-call-iptables=1); allow it there or unload the module.
# This script never touches firewall settings.
#
# Usage: see `testbed.sh help`.
set -euo pipefail

PROG=$(basename "$0")
DEFAULT_NAME=ddpsim
MAX_HOSTS=64
ALIAS_TAG=ddpsim-testbed   # first word of the bridge ifalias, marks our bridges

usage() {
  cat <<EOF
Usage:
  $PROG up K [--rate RATE] [--name NAME] [--burst BYTES]
                                           build K test hosts (1..$MAX_HOSTS)
  $PROG down [--name NAME]                 remove the testbed (no-op if absent)
  $PROG status [--name NAME]               show hosts, addresses, rates;
                                           exit 0 if up, 1 if not
  $PROG addr I [--name NAME]               print host I's address
  $PROG exec I [--name NAME] -- CMD...     run CMD inside host I
  $PROG help                               this text

  NAME   letters, digits and dashes, at most 8 characters (default: $DEFAULT_NAME).
         Hosts are namespaces NAME-h1..NAME-hK, the bridge is NAME-br.
  RATE   tc rate syntax, e.g. 100mbit, 500mbit, 1gbit, 2gbit, 12.5mbps;
         "none" (the default) leaves the links unshaped.
  BYTES  tbf bucket size in bytes (default max(131072, 5 ms of RATE));
         below ~70000 tbf must split TCP's 64 KiB GSO packets in software.

Addresses: NAME $DEFAULT_NAME uses 198.18.0.0/24 (host I = 198.18.0.I); other
names get their own /24 in 198.18.0.0/15 derived from the name (see the
header of this script). Needs root and iproute2 (ip, tc) except for addr/help.
EOF
}

die()   { echo "$PROG: error: $*" >&2; exit 1; }
usage_err() { echo "$PROG: error: $*" >&2; echo "Run '$PROG help' for usage." >&2; exit 2; }
note()  { echo "$PROG: $*" >&2; }

# ---------------------------------------------------------------- checks --
need_tools() {
  if [ "$(id -u)" -ne 0 ]; then
    die "must run as root (network namespaces, veth, bridge and tc need CAP_NET_ADMIN); rerun with sudo"
  fi
  local t missing=()
  for t in ip tc; do command -v "$t" >/dev/null 2>&1 || missing+=("$t"); done
  if [ ${#missing[@]} -gt 0 ]; then
    die "missing ${missing[*]}: install iproute2 (apt-get install iproute2, or run scripts/setup.sh)"
  fi
}

valid_name() { [[ $1 =~ ^[A-Za-z0-9-]{1,8}$ ]]; }

# Rate in tc syntax -> bits per second (integer) on stdout; fails if invalid.
# Accepts a decimal number followed by bit|kbit|mbit|gbit|tbit, the IEC
# kibit..tibit, or the byte variants bps|kbps|mbps|gbps|tbps|kibps..tibps.
rate_to_bits() {
  local r=${1,,}
  [[ $r =~ ^([0-9]+(\.[0-9]+)?)([kmgt]i?)?(bit|bps)$ ]] || return 1
  local num=${BASH_REMATCH[1]} pfx=${BASH_REMATCH[3]} unit=${BASH_REMATCH[4]}
  awk -v n="$num" -v p="$pfx" -v u="$unit" 'BEGIN {
    m["k"]=1e3; m["m"]=1e6; m["g"]=1e9; m["t"]=1e12
    m["ki"]=1024; m["mi"]=1048576; m["gi"]=1073741824; m["ti"]=1099511627776
    f = (p == "") ? 1 : m[p]; if (u == "bps") f *= 8
    b = n * f
    if (b < 8000 || b > 400e9) exit 1      # 8 kbit/s .. 400 Gbit/s
    printf "%.0f\n", b }'
}

# Subnet index of a name (0..511), see header.
subnet_index() {
  if [ "$1" = "$DEFAULT_NAME" ]; then echo 0; return; fi
  local c
  c=$(printf '%s' "$1" | cksum | awk '{print $1}')
  echo $(( 1 + c % 511 ))
}
subnet_prefix() {   # "198.18.0" for index 0
  local s; s=$(subnet_index "$1")
  echo "198.$((18 + s / 256)).$((s % 256))"
}

# ------------------------------------------------------------- discovery --
# Names are matched exactly (^NAME-h[0-9]+$), so testbeds whose names share a
# prefix ("a" and "a-h1") never see each other's objects.
list_netns() {   # namespaces of testbed $1, one per line
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$1-h[0-9]+\$" || true
}
list_ports() {   # bridge-side veths of testbed $1
  ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' \
    | grep -E "^$1-h[0-9]+-b\$" || true
}
bridge_exists() { ip link show dev "$1-br" >/dev/null 2>&1; }
bridge_alias()  { cat "/sys/class/net/$1-br/ifalias" 2>/dev/null || true; }
alias_field()   { # alias_field ALIAS KEY
  local w; for w in $1; do [[ $w == "$2="* ]] && { echo "${w#*=}"; return; }; done; true
}
exists_any() {
  bridge_exists "$1" || [ -n "$(list_netns "$1")" ] || [ -n "$(list_ports "$1")" ]
}

# ---------------------------------------------------------------- shaping --
# tbf parameters for a rate in bit/s: prints "BURST LIMIT" in bytes.
# BURST_OVERRIDE (from --burst) replaces the computed burst.
#
# Why these numbers (measured on the 2-vCPU VM this was developed on, one
# python TCP stream h1 -> h2, goodput; the TCP/IP/Ethernet headers make
# 0.956 x RATE the ceiling):
# * Offloads stay ON. veth does GSO/TSO, so TCP hands the qdisc super-packets
#   of up to gso_max_size (64 KiB of payload; tbf accounts ~68 KB for one,
#   headers of every segment included). A tbf whose bucket is smaller than a
#   packet segments GSO packets in software (tbf_segment): it works, but costs
#   CPU per 1.5 KB packet and got only ~0.57 x 1gbit with a 15 KB burst. We
#   do not need ethtool (not in Debian's base system) to turn TSO/GSO off:
#   that would cost the same per-packet CPU on every path, shaped or not.
#   Instead the bucket always holds whole GSO packets: burst >= 128 KiB (two
#   of them), so nothing is segmented and the bucket refills while the
#   previous packet drains. 100mbit then gives 95.6 Mbit/s (0.956, the
#   ceiling).
# * burst >= 5 ms of RATE. The bucket is refilled by an hrtimer watchdog, and
#   on a virtual machine the vCPU running it is sometimes descheduled by the
#   hypervisor (steal time): tokens that would overflow the bucket during
#   such a pause are lost for good. At 1gbit with ~10% steal we measured
#   0.86 x RATE with 1 ms of burst, 0.92 with 2 ms, 0.94-0.95 with 4 ms and
#   0.955 with 8 ms. Ordinary CPU load inside the VM does not matter (the
#   shaping runs in softirq context). 5 ms keeps a single stream at >= 0.9 x
#   RATE with margin, at 1gbit = 625 KB, 2gbit = 1.25 MB.
#   Cost: after an idle period the first BURST bytes leave at memory speed,
#   so a transfer of S > BURST bytes takes ~(S - BURST)/RATE, not S/RATE
#   (through two tbfs in series, host uplink and switch port). Anything that
#   times short transfers (latency/bandwidth fits) should keep S >> BURST,
#   or pass a smaller --burst (>= 70000 to avoid segmentation) and accept a
#   lower long-run rate under steal.
# * limit (queue bytes) = burst + 10 ms of RATE: several senders converging
#   on one host's switch port queue like a shallow switch buffer instead of
#   dropping at once, and queueing delay stays ~10 ms. A single stream never
#   fills it: TCP small queues bound what one socket has in the first tbf.
tbf_params() {
  awk -v b="$1" -v burst_ovr="${BURST_OVERRIDE:-}" 'BEGIN {
    Bps = b / 8
    burst = Bps * 0.005; if (burst < 131072) burst = 131072
    if (burst_ovr != "") burst = burst_ovr
    limit = burst + Bps * 0.010
    printf "%.0f %.0f\n", burst, limit }'
}

shape_link() {   # shape_link NETNS("" for root) DEV RATE BURST LIMIT
  local ns=$1 dev=$2 rate=$3 burst=$4 limit=$5
  local -a tcn=(tc); [ -n "$ns" ] && tcn=(tc -n "$ns")
  "${tcn[@]}" qdisc replace dev "$dev" root tbf rate "$rate" burst "$burst" limit "$limit"
}

# --------------------------------------------------------------- commands --
do_down() {   # do_down NAME [quiet]
  local name=$1 p ns
  if ! exists_any "$name"; then
    [ "${2:-}" = quiet ] || note "testbed '$name' is not up; nothing to remove"
    return 0
  fi
  # Deleting the bridge-side veth deletes its peer (eth0 in the namespace) and
  # both qdiscs with it; then the namespaces, then the bridge.
  for p in $(list_ports "$name"); do ip link del dev "$p" 2>/dev/null || true; done
  for ns in $(list_netns "$name"); do ip netns del "$ns" 2>/dev/null || true; done
  if bridge_exists "$name"; then ip link del dev "$name-br" 2>/dev/null || true; fi
  if exists_any "$name"; then
    echo "$PROG: error: could not remove everything of testbed '$name':" >&2
    { list_netns "$name"; list_ports "$name"; bridge_exists "$name" && echo "$name-br"; } >&2 || true
    return 1
  fi
  [ "${2:-}" = quiet ] || note "testbed '$name' is down"
}

UP_NAME=""
UP_DONE=0
up_cleanup() {
  local rc=$?
  if [ "$UP_DONE" -ne 1 ] && [ -n "$UP_NAME" ]; then
    echo "$PROG: error: 'up' failed (exit $rc); removing what was made" >&2
    trap - ERR
    set +e
    do_down "$UP_NAME" quiet
    [ "$rc" -eq 0 ] && rc=1
  fi
  exit "$rc"
}

set_sysctl() {   # best effort: set_sysctl NETNS("" = root) KEY VALUE
  local -a pre=(); [ -n "$1" ] && pre=(ip netns exec "$1")
  "${pre[@]}" sysctl -q -w "$2=$3" >/dev/null 2>&1 || true
}

do_up() {
  local k=$1 rate=$2 name=$3
  local prefix sidx rate_bits="" burst="" limit="" i ns port alias other oname osub
  prefix=$(subnet_prefix "$name")
  sidx=$(subnet_index "$name")

  # Refuse if another testbed already uses this subnet (checksum collision).
  for other in /sys/class/net/*-br; do
    [ -e "$other" ] || continue
    alias=$(cat "$other/ifalias" 2>/dev/null || true)
    [[ $alias == "$ALIAS_TAG "* ]] || continue
    oname=$(alias_field "$alias" name); osub=$(alias_field "$alias" subnet)
    if [ "$oname" != "$name" ] && [ "$osub" = "$prefix.0/24" ]; then
      die "testbed '$oname' already uses $prefix.0/24, which name '$name' maps to; pick another --name"
    fi
  done

  if [ "$rate" != none ]; then
    rate_bits=$(rate_to_bits "$rate")
    read -r burst limit < <(tbf_params "$rate_bits")
  fi

  if exists_any "$name"; then
    note "testbed '$name' exists; removing it first"
    do_down "$name" quiet
  fi

  UP_NAME=$name; UP_DONE=0
  trap up_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  ip link add name "$name-br" type bridge stp_state 0 forward_delay 0
  echo "$ALIAS_TAG name=$name hosts=$k rate=$rate burst=${burst:-none} subnet=$prefix.0/24 index=$sidx" \
    > "/sys/class/net/$name-br/ifalias"
  # No IPv6 on the root-namespace side: keeps the bridge from sending router
  # solicitations/MLD into the test network and avoids a link-local address.
  set_sysctl "" "net.ipv6.conf.$name-br.disable_ipv6" 1
  ip link set dev "$name-br" up

  for ((i = 1; i <= k; i++)); do
    ns=$name-h$i
    port=$name-h$i-b
    ip netns add "$ns"
    set_sysctl "$ns" net.ipv6.conf.all.disable_ipv6 1
    set_sysctl "$ns" net.ipv6.conf.default.disable_ipv6 1
    ip link add name "$port" type veth peer name eth0 netns "$ns"
    set_sysctl "" "net.ipv6.conf.$port.disable_ipv6" 1
    ip link set dev "$port" master "$name-br"
    ip -n "$ns" addr add "$prefix.$i/24" dev eth0
    ip -n "$ns" link set dev lo up
    if [ -n "$rate_bits" ]; then
      shape_link "$ns" eth0 "$rate" "$burst" "$limit"   # host -> switch
      shape_link ""    "$port" "$rate" "$burst" "$limit" # switch -> host
    fi
    ip -n "$ns" link set dev eth0 up
    ip link set dev "$port" up
  done

  UP_DONE=1
  trap - EXIT INT TERM
  if [ -n "$rate_bits" ]; then
    note "testbed '$name' up: $k host(s) $prefix.1-$prefix.$k/24, links shaped to $rate (tbf burst ${burst}B limit ${limit}B)"
  else
    note "testbed '$name' up: $k host(s) $prefix.1-$prefix.$k/24, links unshaped"
  fi
}

do_status() {
  local name=$1 alias k rate ns i state q ok=1
  if ! bridge_exists "$name"; then
    if exists_any "$name"; then
      echo "testbed '$name': PARTIAL (no bridge; leftovers present) - run: $PROG down --name $name"
    else
      echo "testbed '$name': down"
    fi
    return 1
  fi
  alias=$(bridge_alias "$name")
  k=$(alias_field "$alias" hosts); rate=$(alias_field "$alias" rate)
  [[ $k =~ ^[0-9]+$ ]] || { echo "testbed '$name': bridge $name-br exists but is not a testbed bridge"; return 1; }
  echo "testbed '$name': $k host(s), bridge $name-br, subnet $(alias_field "$alias" subnet), rate ${rate:-?}, tbf burst $(alias_field "$alias" burst)"
  printf '  %-12s %-16s %-6s %s\n' HOST ADDRESS STATE "QDISC (eth0 egress | bridge port egress)"
  for ((i = 1; i <= k; i++)); do
    ns=$name-h$i
    if ! ip netns list 2>/dev/null | awk '{print $1}' | grep -qx -- "$ns"; then
      printf '  %-12s %-16s %-6s\n' "$ns" - MISSING; ok=0; continue
    fi
    local a
    a=$(ip -n "$ns" -o -4 addr show dev eth0 2>/dev/null | awk '{print $4}' | head -n1)
    state=$(ip -n "$ns" -o link show dev eth0 2>/dev/null | grep -q 'state UP' && echo UP || echo DOWN)
    [ "$state" = UP ] || ok=0
    q="$(qdisc_desc "$ns" eth0) | $(qdisc_desc "" "$ns-b")"
    printf '  %-12s %-16s %-6s %s\n' "$ns" "${a:--}" "$state" "$q"
  done
  [ "$ok" -eq 1 ] || { echo "testbed '$name': DEGRADED - run: $PROG up $k --name $name ..."; return 1; }
}

qdisc_desc() {  # one-line summary of the root qdisc of DEV in NETNS
  local -a tcn=(tc); [ -n "$1" ] && tcn=(tc -n "$1")
  "${tcn[@]}" qdisc show dev "$2" root 2>/dev/null | head -n1 \
    | awk '{ if ($2 == "tbf") { s = "tbf"; for (i = 3; i <= NF; i++) if ($i == "rate" || $i == "burst" || $i == "lat") s = s " " $i " " $(i+1); print s } else if ($2 == "noqueue") print "unshaped"; else print $2 }'
}

host_index() {  # host_index I MAX: I is an integer in 1..MAX
  [[ $1 =~ ^[0-9]{1,4}$ ]] && [ "$((10#$1))" -ge 1 ] && [ "$((10#$1))" -le "$2" ]
}

# ------------------------------------------------------------------- main --
# shellcheck disable=SC2015  # "check && check || usage_err" is intended
main() {
  [ $# -ge 1 ] || { usage >&2; exit 2; }
  local cmd=$1; shift
  local name=$DEFAULT_NAME rate=none burst="" pos=() cmdargs=()
  case $cmd in
    help|-h|--help) usage; exit 0 ;;
    up|down|status|addr|exec) ;;
    *) usage_err "unknown command '$cmd'" ;;
  esac
  while [ $# -gt 0 ]; do
    case $1 in
      --name)   [ $# -ge 2 ] || usage_err "--name needs a value"; name=$2; shift 2 ;;
      --name=*) name=${1#*=}; shift ;;
      --rate)   [ "$cmd" = up ] || usage_err "--rate only applies to 'up'"
                [ $# -ge 2 ] || usage_err "--rate needs a value"; rate=$2; shift 2 ;;
      --rate=*) [ "$cmd" = up ] || usage_err "--rate only applies to 'up'"; rate=${1#*=}; shift ;;
      --burst)  [ "$cmd" = up ] || usage_err "--burst only applies to 'up'"
                [ $# -ge 2 ] || usage_err "--burst needs a value"; burst=$2; shift 2 ;;
      --burst=*) [ "$cmd" = up ] || usage_err "--burst only applies to 'up'"; burst=${1#*=}; shift ;;
      --)       shift; cmdargs=("$@"); break ;;
      -h|--help) usage; exit 0 ;;
      -*)       usage_err "unknown option '$1'" ;;
      *)        pos+=("$1"); shift ;;
    esac
  done
  valid_name "$name" || usage_err "bad --name '$name': use 1-8 letters, digits or dashes"

  case $cmd in
    up)
      [ ${#pos[@]} -eq 1 ] || usage_err "'up' takes exactly one host count K"
      host_index "${pos[0]}" "$MAX_HOSTS" || usage_err "bad host count '${pos[0]}': K must be an integer in 1..$MAX_HOSTS"
      [ ${#cmdargs[@]} -eq 0 ] || usage_err "'up' takes no command after --"
      rate=${rate,,}
      if [ "$rate" != none ]; then
        rate_to_bits "$rate" >/dev/null || usage_err "bad --rate '$rate': use tc syntax such as 100mbit, 1gbit, 2gbit (8kbit..400gbit) or none"
      fi
      if [ -n "$burst" ]; then
        [[ $burst =~ ^[0-9]{1,10}$ ]] && [ "$burst" -ge 1600 ] && [ "$burst" -le 1073741824 ] \
          || usage_err "bad --burst '$burst': give bytes, 1600..1073741824"
        [ "$rate" != none ] || usage_err "--burst needs --rate"
        BURST_OVERRIDE=$((10#$burst))
      fi
      need_tools
      do_up "$((10#${pos[0]}))" "$rate" "$name" ;;
    down)
      [ ${#pos[@]} -eq 0 ] && [ ${#cmdargs[@]} -eq 0 ] || usage_err "'down' takes no arguments besides --name"
      need_tools
      do_down "$name" ;;
    status)
      [ ${#pos[@]} -eq 0 ] && [ ${#cmdargs[@]} -eq 0 ] || usage_err "'status' takes no arguments besides --name"
      need_tools
      do_status "$name" ;;
    addr)
      [ ${#pos[@]} -eq 1 ] && [ ${#cmdargs[@]} -eq 0 ] || usage_err "'addr' takes exactly one host index I"
      host_index "${pos[0]}" "$MAX_HOSTS" || usage_err "bad host index '${pos[0]}': I must be an integer in 1..$MAX_HOSTS"
      echo "$(subnet_prefix "$name").$((10#${pos[0]}))" ;;
    exec)
      [ ${#pos[@]} -eq 1 ] || usage_err "'exec' takes exactly one host index I, then -- CMD..."
      [ ${#cmdargs[@]} -gt 0 ] || usage_err "'exec' needs a command after --"
      host_index "${pos[0]}" "$MAX_HOSTS" || usage_err "bad host index '${pos[0]}': I must be an integer in 1..$MAX_HOSTS"
      need_tools
      local ns=$name-h$((10#${pos[0]}))
      ip netns list 2>/dev/null | awk '{print $1}' | grep -qx -- "$ns" \
        || die "host $ns does not exist; bring the testbed up with: $PROG up K --name $name"
      exec ip netns exec "$ns" "${cmdargs[@]}" ;;
  esac
}

main "$@"
