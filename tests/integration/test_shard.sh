#!/usr/bin/env bash
# Integration test of studies split over processes: scripts/slurm/submit.sh
# submits the shipped job-array and merge scripts to an sbatch stand-in that
# runs every array task as its own process, all at once, with the variables
# Slurm sets; the merged CSV must be the unsharded run's, byte for byte, for
# a sweep and for a study with a job level (Monte Carlo runs and the best
# checkpoint interval among siblings). A missing or cut shard, or one of
# another seed, profile or version of the scenario (told by its stamp),
# makes the merge fail with nothing written; the array script refuses to run
# outside an array.
#
#   test_shard.sh DDPSIM_BINARY SOURCE_DIR
set -u

bin=${1:?usage: test_shard.sh DDPSIM_BINARY SOURCE_DIR}
src=${2:?source dir}
. "$src/tests/integration/lib.sh"
it_begin test_shard
need_tools test_shard cmp

# sbatch as far as the scripts use it: --parsable, --array=LO-HI (tasks in
# parallel, each a process of its own), --dependency=afterok:ID; prints the
# job id; other options are ignored.
mkdir -p "$work/bin" "$work/slurm"
cat >"$work/bin/sbatch" <<'EOF'
#!/usr/bin/env bash
state=${FAKE_SLURM_STATE:?}
array="" dep=""
while [ $# -gt 0 ] && [ "${1#--}" != "$1" ]; do
  case $1 in
    --array=*) array=${1#--array=} ;;
    --dependency=*) dep=${1#--dependency=afterok:} ;;
  esac
  shift
done
script=$1
shift
id=$(( $(cat "$state/next" 2>/dev/null || echo 100) ))
echo $((id + 1)) >"$state/next"
if [ -n "$dep" ] && [ "$(cat "$state/$dep" 2>/dev/null)" != ok ]; then
  echo "failed" >"$state/$id"
  echo "$id"
  exit 0
fi
if [ -n "$array" ]; then
  lo=${array%-*} hi=${array#*-}
  pids=""
  for t in $(seq "$lo" "$hi"); do
    SLURM_ARRAY_JOB_ID=$id SLURM_ARRAY_TASK_ID=$t SLURM_ARRAY_TASK_COUNT=$((hi - lo + 1)) \
      SLURM_ARRAY_TASK_MIN=$lo SLURM_ARRAY_TASK_MAX=$hi SLURM_CPUS_PER_TASK=1 \
      bash "$script" "$@" >"$state/$id-$t.log" 2>&1 &
    pids="$pids $!"
  done
  st=ok
  for p in $pids; do wait "$p" || st=failed; done
  echo "$st" >"$state/$id"
else
  if SLURM_JOB_ID=$id bash "$script" "$@" >"$state/$id.log" 2>&1; then echo ok >"$state/$id"; else echo failed >"$state/$id"; fi
fi
echo "$id"
EOF
chmod +x "$work/bin/sbatch"
export PATH="$work/bin:$PATH" FAKE_SLURM_STATE="$work/slurm" DDPSIM="$bin" MERGE_ARGS=""

# A study through submit.sh in N shards against the same study unsharded.
sharded_equals_whole() { # NAME SCENARIO N
  local name=$1 scen=$2 n=$3 csv
  run "$name-whole" simulate "$scen" -o "$work/$name-whole" -q
  csv=$(basename "$(ls "$work/$name-whole"/*.csv)")
  check "$name: submit.sh runs" bash "$src/scripts/slurm/submit.sh" "$scen" "$work/$name" "$n" \
    >"$work/$name-submit.out" 2>&1 || cat "$work/$name-submit.out" "$work"/slurm/*.log >&2
  check "$name: $n shard files" [ "$(ls "$work/$name"/*.shard-*-of-"$n".csv | wc -l)" -eq "$n" ]
  check "$name: every shard holds rows" \
    [ "$(for f in "$work/$name"/*.shard-*.csv; do [ -s "$f" ] || echo empty; done)" = "" ]
  check "$name: merged CSV is the unsharded run's bytes" cmp "$work/$name/$csv" "$work/$name-whole/$csv"
}
sharded_equals_whole sweep "$src/tests/data/jitter-test.cfg" 3
sharded_equals_whole montecarlo "$src/tests/data/shard-job-test.cfg" 4

# The merge refuses a missing shard and a shard cut short, writing nothing.
jobscen="$src/tests/data/shard-job-test.cfg"
mkdir -p "$work/partial"
cp "$work"/montecarlo/*.shard-*.csv "$work/partial/"
rm "$work/partial/shard-job-test.shard-2-of-4.csv"
run merge_missing merge "$jobscen" --shards 4 -o "$work/partial"
check "merge without shard 2 exits 3 (a missing input)" [ "$status" -eq 3 ]
check "merge names the missing shard" grep -q "shard-2-of-4.csv" "$work/merge_missing.err"
check "merge without shard 2 writes nothing" [ ! -e "$work/partial/shard-job-test.csv" ]
cp "$work/montecarlo/shard-job-test.shard-2-of-4.csv" "$work/partial/"
sed -i '$d' "$work/partial/shard-job-test.shard-1-of-4.csv"
run merge_short merge "$jobscen" --shards 4 -o "$work/partial"
check "merge of a short shard exits 3" [ "$status" -eq 3 ]
check "merge names the short shard" grep -q "shard-1-of-4.csv holds" "$work/merge_short.err"
check "merge of a short shard writes nothing" [ ! -e "$work/partial/shard-job-test.csv" ]
# A shard that is a device or a FIFO (never what simulate --shard wrote) is
# refused at once: /dev/zero would be read until memory ran out, a FIFO block.
mkdir -p "$work/devshard"
cp "$work"/montecarlo/*.shard-*.csv "$work/devshard/"
ln -sf /dev/zero "$work/devshard/shard-job-test.shard-1-of-4.csv"
it_watchdog=20
run merge_dev merge "$jobscen" --shards 4 -o "$work/devshard"
check "merge of a shard that is /dev/zero exits 3" [ "$status" -eq 3 ]
check "... saying it is not a regular file" grep -q "shard-1-of-4.csv is not a regular file" "$work/merge_dev.err"
rm "$work/devshard/shard-job-test.shard-1-of-4.csv"
mkfifo "$work/devshard/shard-job-test.shard-1-of-4.csv"
run merge_fifo merge "$jobscen" --shards 4 -o "$work/devshard"
check "merge of a shard that is a FIFO exits 3" [ "$status" -eq 3 ]
check "merge of a device or FIFO shard writes nothing" [ ! -e "$work/devshard/shard-job-test.csv" ]
it_watchdog=60
run merge_wrong_n merge "$jobscen" --shards 3 -o "$work/montecarlo"
check "merge with another N fails" [ "$status" -ne 0 ]
# -o naming a file, not the shards' directory, is a usage error saying so.
run merge_file_out merge "$jobscen" --shards 4 -o "$work/montecarlo/shard-job-test.shard-0-of-4.csv"
check "merge -o FILE exits 2" [ "$status" -eq 2 ]
check "merge -o FILE says it is not a directory" grep -q "is not a directory" "$work/merge_file_out.err"
# A shard of an edited scenario (one node count changed: the same number of
# rows) is refused at its first row of another point, writing nothing.
mkdir -p "$work/edited"
sed "s/nodes = \[2, 4, 8\]/nodes = [2, 4, 16]/; s|\.\./\.\./|$src/|g" "$jobscen" >"$work/edited/scen.cfg"
cp "$work"/montecarlo/*.shard-*.csv "$work/edited/"
run edited_shard simulate "$work/edited/scen.cfg" --shard 2/4 -o "$work/edited" -q
check "the edited scenario's shard runs" [ "$status" -eq 0 ]
run merge_edited merge "$jobscen" --shards 4 -o "$work/edited"
check "merge of an edited scenario's shard exits 3" [ "$status" -eq 3 ]
check "merge names the edited shard" grep -q "shard-2-of-4.csv:1: shard 2 was run on another version of" \
  "$work/merge_edited.err"
check "merge of an edited scenario's shard writes nothing" [ ! -e "$work/edited/shard-job-test.csv" ]

# Every shard is stamped with its seed, its profile and its files; the merge
# refuses shards of another --seed or --profile (the same rows, other
# values), naming the shard and what to do, and writes nothing. The merged
# CSV has no stamp: it is the unsharded run's bytes.
check "a shard's first line is its stamp" \
  grep -q "^# ddpsim shard 1/4: seed [0-9]*, profile [0-9a-f]\{16\}, scenario and models [0-9a-f]\{16\}$" \
  <(head -n 1 "$work/montecarlo/shard-job-test.shard-1-of-4.csv")
check "the merged CSV has no stamp" [ "$(grep -c '^#' "$work/montecarlo/shard-job-test.csv")" -eq 0 ]
mkdir -p "$work/seeds"
cp "$work"/montecarlo/*.shard-*.csv "$work/seeds/"
run seed_shard simulate "$jobscen" --shard 3/4 --seed 9 -o "$work/seeds" -q
run merge_seeds merge "$jobscen" --shards 4 -o "$work/seeds"
check "merge of shards of two seeds exits 3" [ "$status" -eq 3 ]
check "merge names the shard of another seed" grep -q "shard-3-of-4.csv:1: shard 3 was run with seed 9, shard 0" \
  "$work/merge_seeds.err"
check "merge of shards of two seeds writes nothing" [ ! -e "$work/seeds/shard-job-test.csv" ]
# Another profile: the scenario's with a slower memory.
prof="$work/slow-memory.cfg"
sed 's/memory_GBps = 8.1392733479302795;/memory_GBps = 4.0;/' "$src/scenarios/profiles/example-2core.cfg" >"$prof"
check "the slower profile differs" grep -q "memory_GBps = 4.0;" "$prof"
mkdir -p "$work/profiles"
cp "$work"/montecarlo/*.shard-*.csv "$work/profiles/"
run profile_shard simulate "$jobscen" --shard 0/4 --profile "$prof" -o "$work/profiles" -q
run merge_profiles merge "$jobscen" --shards 4 -o "$work/profiles"
check "merge of shards of two profiles exits 3" [ "$status" -eq 3 ]
check "merge names the shard of another profile" grep -q "shard-0-of-4.csv:1: shard 0 was run on another profile" \
  "$work/merge_profiles.err"
check "merge of shards of two profiles writes nothing" [ ! -e "$work/profiles/shard-job-test.csv" ]
# A file that is not a shard (no stamp) is refused.
mkdir -p "$work/nostamp"
cp "$work"/montecarlo/*.shard-*.csv "$work/nostamp/"
sed -i 1d "$work/nostamp/shard-job-test.shard-1-of-4.csv"
run merge_nostamp merge "$jobscen" --shards 4 -o "$work/nostamp"
check "merge of a shard without its stamp exits 3" [ "$status" -eq 3 ]
check "merge says the shard has no stamp" grep -q "shard-1-of-4.csv:1: no shard stamp" "$work/merge_nostamp.err"
check "merge of a shard without its stamp writes nothing" [ ! -e "$work/nostamp/shard-job-test.csv" ]
# Shards of one --seed and --profile through submit.sh (which gives the
# merge the --profile) merge into the unsharded run's bytes with them.
run seed_prof_whole simulate "$jobscen" --seed 9 --profile "$prof" -o "$work/seed-prof-whole" -q
check "submit.sh with --seed and --profile runs" bash "$src/scripts/slurm/submit.sh" "$jobscen" "$work/seed-prof" 3 \
  --seed 9 --profile "$prof" >"$work/seed-prof-submit.out" 2>&1 || cat "$work/seed-prof-submit.out" "$work"/slurm/*.log >&2
check "merged --seed and --profile shards are the unsharded run's bytes" \
  cmp "$work/seed-prof/shard-job-test.csv" "$work/seed-prof-whole/shard-job-test.csv"

# --trace given to every shard: the shard of the point writes it, another
# writes none and says which shard does.
run trace_other simulate "$jobscen" --shard 1/4 --trace "$work/t1.json" -o "$work/traces" -q
check "a shard without the traced point succeeds" [ "$status" -eq 0 ]
check "it writes no trace" [ ! -e "$work/t1.json" ]
check "it says which shard holds the point" grep -q "point 0 is in shard 0 of 4, not this shard (1)" \
  "$work/trace_other.err"
run trace_own simulate "$jobscen" --shard 0/4 --trace "$work/t0.json" -o "$work/traces" -q
check "the shard of the traced point writes it" [ -s "$work/t0.json" ]

# An array of one task: its one shard merges into the unsharded run's bytes.
check "submit.sh with N = 1 runs" bash "$src/scripts/slurm/submit.sh" "$jobscen" "$work/one" 1 \
  >"$work/one-submit.out" 2>&1 || cat "$work/one-submit.out" "$work"/slurm/*.log >&2
check "the merge of one shard succeeds" [ "$(cat "$work/slurm/$(($(cat "$work/slurm/next") - 1))")" = ok ]
check "one shard merged is the unsharded run's bytes" cmp "$work/one/shard-job-test.csv" \
  "$work/montecarlo-whole/shard-job-test.csv"

# Outside an array task the array script says how to submit it.
env -u SLURM_ARRAY_TASK_ID bash "$src/scripts/slurm/simulate-array.sbatch" "$jobscen" "$work/none" \
  >"$work/noarray.out" 2>&1
check "array script outside an array fails" [ $? -ne 0 ]
check "array script says to use --array" grep -q -- "--array" "$work/noarray.out"
it_end
