#!/usr/bin/env bash
# Integration test of scripts/testbed.sh: builds real test hosts (network
# namespaces on a bridge, tbf-shaped veth links) and checks connectivity,
# shaped throughput, idempotent up/down, cleanup on failure and argument
# validation. Needs root and a kernel that allows network namespaces; exits
# 77 (skip) otherwise.
#
#   bash tests/integration/test_testbed.sh
#
# Throughput is TCP goodput of one python3 stream h1 -> h2 over ~3 s after a
# 0.5 s warm-up. Headers make 1448/1514 = 0.956 x RATE the ceiling.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
TB="$SRC/scripts/testbed.sh"
NAME=tbtest            # own name, so a developer's "ddpsim" testbed is left alone
PY=""
WORK=""
FAILS=0

log()  { echo "test_testbed: $*"; }
fail() { echo "test_testbed: FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
pass() { echo "test_testbed: ok: $*"; }

. "$SRC/tests/integration/need.sh"
need_root test_testbed "network namespaces, veth, bridge, tc"
need_tools test_testbed ip tc python3
need_netns test_testbed
PY=$(command -v python3)

cleanup() {
  local rc=$?
  set +e
  [ -n "${RECV_PID:-}" ] && kill "$RECV_PID" 2>/dev/null
  bash "$TB" down --name "$NAME" >/dev/null 2>&1
  bash "$TB" down --name "${NAME}2" >/dev/null 2>&1
  [ -n "$WORK" ] && rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

WORK=$(mktemp -d /tmp/test_testbed.XXXXXX)

# ---- helper: ICMP echo (no ping in Debian's base system), TCP send/recv ----
cat > "$WORK/net.py" <<'EOF'
import os, socket, struct, sys, time

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF

def ping(dst, count=3, timeout=1.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    ident, ok = os.getpid() & 0xFFFF, 0
    for seq in range(1, count + 1):
        body = b"ddpsim-testbed"
        hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
        pkt = struct.pack("!BBHHH", 8, 0, csum(hdr + body), ident, seq) + body
        t0 = time.monotonic()
        s.sendto(pkt, (dst, 0))
        while True:
            left = t0 + timeout - time.monotonic()
            if left <= 0:
                print("no reply from %s seq=%d" % (dst, seq))
                break
            s.settimeout(left)
            try:
                data, addr = s.recvfrom(4096)
            except socket.timeout:
                continue
            ihl = (data[0] & 0x0F) * 4
            typ, _, _, rid, rseq = struct.unpack("!BBHHH", data[ihl:ihl + 8])
            if typ == 0 and rid == ident and rseq == seq and addr[0] == dst:
                print("reply from %s seq=%d time=%.3f ms" % (dst, seq, (time.monotonic() - t0) * 1e3))
                ok += 1
                break
    return 0 if ok == count else 1

def recv(addr, port, warm):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(1)
    ls.settimeout(20)
    c, _ = ls.accept()
    c.settimeout(20)
    buf = bytearray(1 << 20)
    total, t0, mark, last = 0, None, None, None
    while True:
        n = c.recv_into(buf)
        if n == 0:
            break
        now = time.monotonic()
        total += n
        if t0 is None:
            t0 = now
        if mark is None and now - t0 >= warm:
            mark = (now, total)
        last = (now, total)
    if mark is None or last[0] - mark[0] < 1.0:
        print("0")
        return 1
    print("%.0f" % ((last[1] - mark[1]) * 8 / (last[0] - mark[0])))
    return 0

def send(addr, port, dur):
    end = time.monotonic() + 5
    while True:
        try:
            c = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)
    data = b"\0" * (1 << 20)
    stop = time.monotonic() + dur
    while time.monotonic() < stop:
        c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    c.recv(1)          # wait for the receiver to close: all data delivered
    c.close()
    return 0

m = sys.argv[1]
if m == "ping":
    sys.exit(ping(sys.argv[2]))
elif m == "recv":
    sys.exit(recv(sys.argv[2], int(sys.argv[3]), float(sys.argv[4])))
else:
    sys.exit(send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4])))
EOF

WARM=0.5
MEASURE=3.0

# goodput h1 -> h2 in bit/s on stdout ("0" if the transfer failed)
measure() {
  local a2 out="$WORK/recv.out"
  a2=$(bash "$TB" addr 2 --name "$NAME")
  : > "$out"
  timeout 30 bash "$TB" exec 2 --name "$NAME" -- "$PY" "$WORK/net.py" recv "$a2" 5201 "$WARM" > "$out" &
  RECV_PID=$!
  if ! timeout 30 bash "$TB" exec 1 --name "$NAME" -- "$PY" "$WORK/net.py" send "$a2" 5201 \
       "$(awk -v w="$WARM" -v m="$MEASURE" 'BEGIN{print w + m}')" >/dev/null; then
    kill "$RECV_PID" 2>/dev/null || true
  fi
  wait "$RECV_PID" 2>/dev/null || true
  RECV_PID=""
  local r; r=$(head -n1 "$out")
  [[ $r =~ ^[0-9]+$ ]] || r=0
  echo "$r"
}

# check_rate LABEL RATE_BITS LO HI: measure, retry up to 2 times if too LOW
# (a VM's steal time can stall the shaper); a rate above HI fails at once.
check_rate() {
  local label=$1 rate=$2 lo=$3 hi=$4 try r ratio verdict
  for try in 1 2 3; do
    r=$(measure)
    ratio=$(awk -v r="$r" -v R="$rate" 'BEGIN{printf "%.3f", r / R}')
    verdict=$(awk -v x="$ratio" -v lo="$lo" -v hi="$hi" 'BEGIN{print (x < lo) ? "low" : (x > hi) ? "high" : "ok"}')
    log "measured $label: $(awk -v r="$r" 'BEGIN{printf "%.1f", r / 1e6}') Mbit/s goodput = $ratio x rate (try $try, want $lo..$hi)"
    case $verdict in
      ok)   pass "$label throughput in range"; return 0 ;;
      high) fail "$label throughput $ratio x rate is above $hi: shaping not effective"; return 0 ;;
    esac
  done
  fail "$label throughput $ratio x rate is below $lo after 3 tries"
}

ns_left()   { ip netns list | awk '{print $1}' | grep -E "^$1-h[0-9]+\$" || true; }
link_left() { ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^$1-(br|h[0-9]+-b)\$" || true; }
count()     { if [ -z "$1" ]; then echo 0; else printf '%s\n' "$1" | wc -l; fi; }

ping_12() {
  local a2; a2=$(bash "$TB" addr 2 --name "$NAME")
  bash "$TB" exec 1 --name "$NAME" -- "$PY" "$WORK/net.py" ping "$a2"
}

# Start from a clean slate (a crashed earlier run may have left one).
bash "$TB" down --name "$NAME" >/dev/null

# ---- (a) + (b): 2 hosts at 100mbit ----------------------------------------
log "up 2 --rate 100mbit"
bash "$TB" up 2 --rate 100mbit --name "$NAME"
bash "$TB" status --name "$NAME" || fail "status after up exited non-zero"
if ping_12; then pass "h1 pings h2"; else fail "h1 cannot ping h2"; fi
check_rate 100mbit 100000000 0.85 1.05

# ---- (c) + (d): up again on the existing testbed, at 1gbit ---------------
log "up 2 --rate 1gbit (testbed already up)"
if bash "$TB" up 2 --rate 1gbit --name "$NAME"; then pass "second up works"; else fail "second up failed"; fi
[ "$(count "$(ns_left "$NAME")")" -eq 2 ] || fail "expected 2 namespaces after second up: $(ns_left "$NAME" | tr '\n' ' ')"
if ping_12; then pass "h1 pings h2 after second up"; else fail "h1 cannot ping h2 after second up"; fi
check_rate 1gbit 1000000000 0.85 1.05

# up with fewer hosts replaces the bigger testbed (no stale h3)
bash "$TB" up 3 --name "$NAME" >/dev/null 2>&1 || fail "up 3 failed"
bash "$TB" up 2 --name "$NAME" >/dev/null 2>&1 || fail "up 2 after up 3 failed"
if [ "$(count "$(ns_left "$NAME")")" -eq 2 ]; then pass "up 3 then up 2 leaves 2 hosts"
else fail "up 3 then up 2 left: $(ns_left "$NAME" | tr '\n' ' ')"; fi

# a second testbed coexists on its own subnet
a_one=$(bash "$TB" addr 1 --name "$NAME"); a_two=$(bash "$TB" addr 1 --name "${NAME}2")
if [ "${a_one%.*}" != "${a_two%.*}" ] && bash "$TB" up 1 --name "${NAME}2" >/dev/null 2>&1 \
   && bash "$TB" status --name "$NAME" >/dev/null && bash "$TB" status --name "${NAME}2" >/dev/null; then
  pass "testbeds $NAME ($a_one) and ${NAME}2 ($a_two) coexist"
else
  fail "second testbed ${NAME}2 could not coexist ($a_one vs $a_two)"
fi
bash "$TB" down --name "${NAME}2" >/dev/null 2>&1 || fail "down ${NAME}2 failed"
[ "$(bash "$TB" addr 1)" = 198.18.0.1 ] || fail "default testbed host 1 is not 198.18.0.1"

# ---- (e) down removes everything, (f) down again is a no-op -------------------
bash "$TB" down --name "$NAME" || fail "down exited non-zero"
left="$(ns_left "$NAME")$(link_left "$NAME")"
if [ -z "$left" ]; then pass "nothing left after down"; else fail "left after down: $(echo "$left" | tr '\n' ' ')"; fi
if bash "$TB" status --name "$NAME" >/dev/null; then fail "status exits 0 when down"; else pass "status exits 1 when down"; fi
if bash "$TB" down --name "$NAME" >/dev/null 2>&1; then pass "down when already down exits 0"; else fail "down when already down exited non-zero"; fi

# ---- a failing up removes what it made ---------------------------------------
mkdir -p "$WORK/badbin"
printf '#!/bin/sh\necho "simulated tc failure" >&2\nexit 1\n' > "$WORK/badbin/tc"
chmod +x "$WORK/badbin/tc"
if PATH="$WORK/badbin:$PATH" bash "$TB" up 2 --rate 100mbit --name "$NAME" >/dev/null 2>&1; then
  fail "up with a failing tc exited 0"
fi
left="$(ns_left "$NAME")$(link_left "$NAME")"
if [ -z "$left" ]; then pass "failed up cleaned up after itself"; else fail "failed up left: $(echo "$left" | tr '\n' ' ')"; fi

# ---- (g) bad arguments ---------------------------------------------------------
bad() {   # bad ARGS...: must exit non-zero with a message on stderr, create nothing
  local err rc=0
  err=$(bash "$TB" "$@" 2>&1 >/dev/null) || rc=$?
  if [ "$rc" -eq 0 ] || [ -z "$err" ]; then
    fail "'testbed.sh $*' should fail with a message (rc=$rc)"
  else
    pass "'testbed.sh $*' rejected: ${err%%$'\n'*}"
  fi
}
bad
bad frobnicate
bad up
bad up 0 --name "$NAME"
bad up 65 --name "$NAME"
bad up two --name "$NAME"
bad up 2 --rate fast --name "$NAME"
bad up 2 --rate 100 --name "$NAME"
bad up 2 --rate
bad up 2 --name toolongname
bad up 2 --name 'bad_nm'
bad up 2 --name ''
bad up 2 --bogus
bad addr 0
bad addr 65
bad down --rate 1gbit
bad exec 1 --name "$NAME"
bad exec 1 --name "$NAME" -- true        # testbed is down
left="$(ns_left "$NAME")$(link_left "$NAME")"
[ -z "$left" ] || fail "bad arguments created: $(echo "$left" | tr '\n' ' ')"

# ---- not root: refused with a message --------------------------------------------
if command -v setpriv >/dev/null 2>&1 && setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$TB" 2>/dev/null; then
  rc=0; err=$(setpriv --reuid=65534 --regid=65534 --clear-groups bash "$TB" up 2 --name "$NAME" 2>&1) || rc=$?
  if [ "$rc" -ne 0 ] && [[ $err == *root* ]]; then pass "non-root up refused: $err"
  else fail "non-root up not refused clearly (rc=$rc): $err"; fi
fi

if [ "$FAILS" -gt 0 ]; then
  log "$FAILS check(s) FAILED"
  exit 1
fi
log "all checks passed"
