#!/usr/bin/env bash
# A one-host Slurm cluster on loopback for tests (srun-ranks.sh): munged, slurmctld and slurmd of
# Debian's slurm-wlm and munge packages, all state under one directory, nothing under /etc. The
# node `localhost` declares 16 CPUs whatever the machine has (SlurmdParameters=config_overrides)
# and its partition oversubscribes, so 16 tasks fit on 2 cores; no cgroups (proctrack/linuxproc,
# task/none), munge on its own socket and key, ports 16817/16818 (not Slurm's 6817/6818, so a
# real installation on the machine is left alone). Clients find it through SLURM_CONF.
#
# Usage: slurm-local-cluster.sh [start|status|stop] [dir]
#   start  (default) starts whichever daemons are not running, waits until the node takes jobs,
#          and prints the config directory (export SLURM_CONF=<it>/slurm.conf); idempotent
#   status exit 0 when the cluster answers and its node is up, 1 otherwise
#   stop   stops the daemons this directory's cluster runs (by their pid files)
# dir: $EIDOLON_SLURM_DIR, default /tmp/eidolon-slurm-$UID. Exit 77: the Slurm or munge binaries
# are absent, or not root; 1: the cluster did not come up (the daemons' logs are printed).
set -u
action=${1:-start}
dir=${2:-${EIDOLON_SLURM_DIR:-/tmp/eidolon-slurm-$(id -u)}}
PATH=$PATH:/usr/sbin:/sbin
for b in munged mungekey slurmctld slurmd scontrol sinfo srun; do
  command -v $b >/dev/null 2>&1 || { echo "skipped: no $b (Debian slurm-wlm, munge)" >&2; exit 77; }
done
# slurmd launches tasks through slurmstepd, which needs root.
[ "$(id -u)" -eq 0 ] || { echo "skipped: slurmd needs root" >&2; exit 77; }
conf=$dir/conf
export SLURM_CONF=$conf/slurm.conf
socket=$dir/munge/munge.socket

pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
node_up() {
  # The node takes jobs: idle, mixed or allocated (not down, drained or unknown).
  local state
  state=$(timeout 10 sinfo -h -n localhost -o %T 2>/dev/null) || return 1
  case $state in idle* | mix* | alloc* | completing*) return 0 ;; *) return 1 ;; esac
}
stop_pid() {
  # The daemon named in pid file $1: SIGTERM, then SIGKILL after 10 s.
  pid_alive "$1" || { rm -f "$1"; return 0; }
  local pid
  pid=$(cat "$1")
  kill "$pid" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
  rm -f "$1"
}

case $action in
status)
  pid_alive "$dir/run/slurmctld.pid" && pid_alive "$dir/run/slurmd.pid" && node_up
  exit
  ;;
stop)
  stop_pid "$dir/run/slurmd.pid"
  stop_pid "$dir/run/slurmctld.pid"
  stop_pid "$dir/munge/munged.pid"
  exit 0
  ;;
start) ;;
*) echo "usage: $0 [start|status|stop] [dir]" >&2; exit 2 ;;
esac

mkdir -p "$conf" "$dir/state" "$dir/spool" "$dir/log" "$dir/run" "$dir/munge"
chmod 0711 "$dir/munge" # munged refuses a socket directory others may write
cat >"$conf/slurm.conf.new" <<EOF
# Written by test/bridge/slurm-local-cluster.sh
ClusterName=eidolon
SlurmctldHost=localhost
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=$(id -un)
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/slurmd-%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
PlugStackConfig=$conf/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=5
InactiveLimit=0
MinJobAge=60
NodeName=localhost NodeAddr=127.0.0.1 CPUs=16 RealMemory=1024 State=UNKNOWN
PartitionName=eidolon Nodes=localhost Default=YES MaxTime=INFINITE OverSubscribe=FORCE:16 State=UP
EOF
: >"$conf/plugstack.conf"
if cmp -s "$conf/slurm.conf.new" "$conf/slurm.conf"; then
  rm "$conf/slurm.conf.new"
else
  mv "$conf/slurm.conf.new" "$conf/slurm.conf"
fi

started=()
if ! pid_alive "$dir/munge/munged.pid"; then
  [ -s "$dir/munge/munge.key" ] || mungekey -c -k "$dir/munge/munge.key" >/dev/null 2>&1 ||
    { echo "mungekey failed" >&2; exit 1; }
  chmod 0600 "$dir/munge/munge.key"
  rm -f "$socket" "$socket.lock"
  munged --force --socket="$socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" >>"$dir/log/munged.log" 2>&1 ||
    { echo "munged did not start:" >&2; tail -5 "$dir/log/munged.log" >&2; exit 1; }
  started+=(munged)
fi
if ! pid_alive "$dir/run/slurmctld.pid"; then
  slurmctld -f "$SLURM_CONF" >>"$dir/log/slurmctld.log" 2>&1 ||
    { echo "slurmctld did not start:" >&2; tail -20 "$dir/log/slurmctld.log" >&2; exit 1; }
  started+=(slurmctld)
fi
if ! pid_alive "$dir/run/slurmd.pid"; then
  slurmd -f "$SLURM_CONF" -N localhost >>"$dir/log/slurmd.log" 2>&1 ||
    { echo "slurmd did not start:" >&2; tail -20 "$dir/log/slurmd.log" >&2; exit 1; }
  started+=(slurmd)
fi
# slurmd registers with slurmctld within a few seconds; a node left down by an earlier run of
# these daemons is resumed.
for i in $(seq 300); do
  node_up && break
  [ $((i % 50)) -eq 0 ] && scontrol update nodename=localhost state=resume >/dev/null 2>&1
  sleep 0.1
done
if ! node_up; then
  echo "the local Slurm cluster did not come up (node: $(sinfo -h -o '%T %E' 2>&1))" >&2
  for log in munged slurmctld slurmd; do
    echo "--- $dir/log/$log.log" >&2
    tail -15 "$dir/log/$log.log" >&2
  done
  exit 1
fi
[ ${#started[@]} -gt 0 ] && echo "started: ${started[*]} (SLURM_CONF=$SLURM_CONF)" >&2
echo "$conf"
