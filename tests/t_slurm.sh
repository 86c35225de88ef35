#!/usr/bin/env bash
# make exp on a real Slurm cluster: a one-node cluster started here (Debian's slurm-wlm and
# munge; bash .ci/deps.sh --slurm installs them) with a minimal configuration — this host as
# its one node with its cores, proctrack/linuxproc, task/none, a private state and spool folder
# and munge socket under a temporary folder, ports chosen free — then:
#   - `make exp` inside `salloc`: every variant's ranks started by `srun --mpi=pmix` (the
#     default inside an allocation), the runs completed and recorded with the launcher used;
#   - the same through `sbatch` with tools/slurm/exp.sbatch;
#   - a cuda variant refused by the pre-flight, which looked on the allocation's node through srun;
#   - SIGTERM to make exp while srun runs the ranks: the job step is signalled (scancel), so
#     the ranks record 'interrupted' themselves and the launch can be resumed.
# The daemons are this test's own and stopped at its end. Where they cannot start (no Slurm, not
# root, a sandbox that refuses them) the test says why and SKIPs.
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1
cd "$ROOT"
skip_all() { echo "SKIP slurm_cluster: $1"; exit 0; }
for tool in slurmctld slurmd munged srun salloc sbatch scancel squeue sinfo; do
    command -v "$tool" >/dev/null 2>&1 ||
        skip_all "$tool is not installed (Debian's slurm-wlm and munge: bash .ci/deps.sh --slurm, as root)"
done
[ "$(id -u)" = 0 ] || skip_all "the test's slurmd runs as root (a node daemon starts jobs as their users)"
command -v python3 >/dev/null 2>&1 || skip_all "python3 picks free ports"

# ---- a private one-node cluster ------------------------------------------------------------
S=$TMP/slurm
mkdir -p "$S/state" "$S/spool" "$S/munge"
chmod 700 "$S/munge"
head -c 1024 /dev/urandom >"$S/munge/munge.key"
chmod 400 "$S/munge/munge.key"
stop_cluster() {   # only the daemons this test started, by their pid files
    for f in "$S/slurmd.pid" "$S/slurmctld.pid" "$S/munge/munged.pid"; do
        [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null
    done
    sleep 1
}
trap 'stop_cluster; [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT
munged --force --socket="$S/munge/sock" --key-file="$S/munge/munge.key" --pid-file="$S/munge/munged.pid" \
    --seed-file="$S/munge/seed" --log-file="$S/munge/log" 2>"$S/munged.err" ||
    skip_all "munged did not start: $(tail -2 "$S/munged.err" "$S/munge/log" 2>/dev/null | tr '\n' ' ')"
read -r P1 P2 < <(python3 -c 'import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
NODE=boostnode$$
CPUS=$(getconf _NPROCESSORS_ONLN)   # (nproc would answer OMP_NUM_THREADS)
cat >"$S/slurm.conf" <<EOF
ClusterName=boosttest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$P1
SlurmdPort=$P2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$S/munge/sock
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
KillWait=10
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=$NODE NodeAddr=127.0.0.1 NodeHostname=$(hostname) CPUs=$CPUS State=UNKNOWN
PartitionName=test Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$S/slurm.conf
slurmctld -i 2>"$S/slurmctld.err" || skip_all "slurmctld did not start: $(tail -2 "$S/slurmctld.err" "$S/slurmctld.log" 2>/dev/null | tr '\n' ' ')"
slurmd -N "$NODE" 2>"$S/slurmd.err" || skip_all "slurmd did not start: $(tail -2 "$S/slurmd.err" "$S/slurmd.log" 2>/dev/null | tr '\n' ' ')"
for i in $(seq 60); do
    [ "$(sinfo -h -n "$NODE" -o %T 2>/dev/null)" = idle ] && break
    sleep 0.5
done
[ "$(sinfo -h -n "$NODE" -o %T 2>/dev/null)" = idle ] ||
    skip_all "the node did not come up: $(sinfo -h -o '%T %E' 2>&1 | head -1); $(tail -2 "$S/slurmd.log" 2>/dev/null | tr '\n' ' ')"
pass slurm_cluster_started

# ---- a small experiment in its own database --------------------------------------------------
DB=$TMP/runs.db
q() { sqlite3 "$DB" "$1"; }
duo_manifest "$TMP/duo.yaml" "$DB"
launch_ok() {   # NAME EXIT LOG: the newest launch completed, both runs completed, srun as its launcher
    local name=$1 rc=$2 log=$3 L row runs
    L=$(q "SELECT MAX(id) FROM launches")
    row=$(q "SELECT status || '|' || launcher FROM launches WHERE id = $L")
    runs=$(q "SELECT group_concat(variant || ':' || world_size || ':' || status, ' ') FROM (SELECT * FROM runs WHERE launch_id = $L ORDER BY id)")
    if [ "$rc" = 0 ] && [[ "$row" == "completed|srun --mpi=pmix --kill-on-bad-exit=1" ]] && [ "$runs" = "a:1:completed b:2:completed" ] &&
       [ "$(grep -c '^\$ srun --ntasks=' "$log")" = 2 ]; then pass "$name"
    else fail "$name" "exit $rc, launch '$row', runs '$runs': $(grep -E '^(error|\$ )' "$log" | head -3 | tr '\n' ' ')"; fi
}

# ---- make exp inside salloc: srun by default ---------------------------------------------------
timeout 240 salloc --immediate=60 -n 2 make -s exp "EXP=$TMP/duo.yaml" >"$TMP/salloc.log" 2>&1; rc=$?
launch_ok make_exp_inside_salloc "$rc" "$TMP/salloc.log"

# ---- through sbatch, with the template ---------------------------------------------------------
timeout 240 sbatch --wait -n 2 -o "$TMP/sbatch.log" tools/slurm/exp.sbatch "EXP=$TMP/duo.yaml" >"$TMP/sbatch.submit" 2>&1; rc=$?
launch_ok make_exp_through_sbatch "$rc" "$TMP/sbatch.log"

# ---- the pre-flight looks where the ranks run: through srun on the allocation's node -----------
if "$BUILD/gpu_probe" >/dev/null 2>&1; then
    echo "SKIP slurm_preflight_cuda_without_device: a CUDA device is usable here"
else
    n0=$(q "SELECT COUNT(*) FROM runs")
    out=$(timeout 120 salloc --immediate=60 -n 2 "$BUILD/exp" "$TMP/duo.yaml" --variant b --set run.device=cuda 2>&1); rc=$?
    err=$(q "SELECT error FROM launches WHERE id = (SELECT MAX(id) FROM launches)")
    if [ $rc = 2 ] && [[ "$err" == *"node $(hostname) (probed through srun) has no usable CUDA device"* ]] && [ "$(q "SELECT COUNT(*) FROM runs")" = "$n0" ]; then
        pass slurm_preflight_cuda_without_device
    else fail slurm_preflight_cuda_without_device "exit $rc, error '$err': $(tail -2 <<<"$out" | tr '\n' ' ')"; fi
fi

# ---- SIGTERM to the launch while srun runs the ranks: they record 'interrupted' themselves -----
cat >"$TMP/stop.sh" <<'SH'
"$BUILD/exp" "$MANIFEST" --variant b --set train.steps=100000 --set train.val_every=0 >"$LOG" 2>&1 &
pid=$!
for i in $(seq 600); do   # until the run has logged a step
    [ "$(sqlite3 -cmd '.timeout 5000' "$DB" "SELECT COUNT(*) FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.status = 'running'" 2>/dev/null)" -gt 0 ] 2>/dev/null && break
    sleep 0.2
done
kill -TERM $pid
wait $pid
SH
BUILD=$BUILD MANIFEST=$TMP/duo.yaml LOG=$TMP/stop.log DB=$DB timeout 240 salloc --immediate=60 -n 2 bash "$TMP/stop.sh" >"$TMP/stop.salloc" 2>&1; rc=$?
row=$(q "SELECT status || '|' || error FROM runs WHERE id = (SELECT MAX(id) FROM runs)")
if [ $rc = 143 ] && [[ "$row" == "interrupted|Terminated received by rank"* ]] && grep -q "interrupted: resume with" "$TMP/stop.log"; then
    pass sigterm_reaches_ranks_through_the_srun_step
else fail sigterm_reaches_ranks_through_the_srun_step "exit $rc, run '$row': $(tail -3 "$TMP/stop.log" | tr '\n' ' ')"; fi
