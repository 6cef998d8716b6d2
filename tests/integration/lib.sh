# Shared by the integration tests (sourced, not run; brings need.sh): a private work
# directory that goes away at exit, taking with it any process still
# running from it (a rank left behind by a failed check); the fail/check
# counters every test reports; run NAME CMD... under a watchdog.
#
#   . "$src/tests/integration/lib.sh"
#   it_begin NAME          # makes $work; traps EXIT, INT, TERM
#   it_on_exit 'CMD'       # more clean-up at exit, after the processes (optional)
#   check "what" CMD...    # counts; on failure says so and returns 1
#   run NAME ARGS...       # $bin ARGS under a watchdog of $it_watchdog s,
#                          # output in $work/NAME.{out,err}, status in $status
#   it_end                 # "NAME: N checks, M failed"; status 0 iff none failed

. "$(dirname "${BASH_SOURCE[0]}")/need.sh"

failures=0
checks=0
work=""
it_name=""
it_watchdog=60
it_quiet=" 0 "   # exit statuses run does not report (space-separated, padded)
it_hook=""

it_cleanup() {
  local rc=$?
  set +e
  local p
  # Everything we started has $work on its command line; end exactly those
  # (SIGCONT first, for a rank a test stopped), then the test's own
  # clean-up, then the directory.
  if [ -n "$work" ]; then
    for p in $(pgrep -f -- "$work" 2>/dev/null); do
      [ "$p" != "$$" ] && kill -CONT "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
    done
  fi
  [ -n "$it_hook" ] && eval "$it_hook"
  [ -n "$work" ] && rm -rf "$work"
  exit "$rc"
}

it_begin() {
  it_name=$1
  trap it_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  work=$(mktemp -d "${TMPDIR:-/tmp}/$it_name.XXXXXX")
}

it_on_exit() { it_hook=$1; }

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

check() { # DESCRIPTION COMMAND...
  checks=$((checks + 1))
  local what=$1
  shift
  "$@" || { fail "$what"; return 1; }
}

run() { # NAME ARGS...
  local name=$1
  shift
  timeout -s KILL "$it_watchdog" "$bin" "$@" >"$work/$name.out" 2>"$work/$name.err"
  status=$?
  if [ "${it_quiet#* $status }" = "$it_quiet" ]; then
    echo "--- $name exited $status; stderr:" >&2
    head -c 2000 "$work/$name.err" >&2
  fi
}

it_end() {
  echo "$it_name: $checks checks, $failures failed"
  [ "$failures" -eq 0 ]
}
