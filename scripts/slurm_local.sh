#!/usr/bin/env bash
# A one-node Slurm on this machine, for testing `myriad sweep --slurm` for real: munge for
# authentication, slurmctld and slurmd on the loopback address, every file under one state
# folder (default /tmp/myriad-slurm). Debian's slurm-wlm and munge are installed if missing.
#   scripts/slurm_local.sh start   # prints the SLURM_CONF to export for sbatch, squeue, ...
#   scripts/slurm_local.sh stop
# Exit status 3 on start: the packages cannot be installed here (the caller may skip).
set -euo pipefail
state=${MYRIAD_SLURM_DIR:-/tmp/myriad-slurm}
conf=$state/slurm.conf

# Ends each daemon and waits (at most 10 s) until it has gone, so its files can be removed.
stop() {
  for daemon in slurmd slurmctld munged; do
    [[ -f $state/$daemon.pid ]] || continue
    local pid
    pid=$(cat "$state/$daemon.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$state/$daemon.pid"
  done
}

install() {
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null &&
    return 0
  [[ $(id -u) -eq 0 ]] || { echo "slurm_local: need root to install slurm-wlm and munge" >&2; return 3; }
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends slurm-wlm munge; } \
    >"$state/install.log" 2>&1 || { echo "slurm_local: cannot install slurm-wlm and munge (see $state/install.log)" >&2; return 3; }
}

start() {
  mkdir -p "$state"
  install || exit $?
  stop
  local host cpus
  host=$(hostname -s)
  cpus=$(nproc)
  mkdir -p "$state/spool/ctld" "$state/spool/d" "$state/munge"
  # munge: its own key, socket and logs in the state folder, run as root (--force).
  [[ -f $state/munge/munge.key ]] || dd if=/dev/urandom of="$state/munge/munge.key" bs=1024 count=1 status=none
  chmod 700 "$state/munge"
  chmod 400 "$state/munge/munge.key"
  /usr/sbin/munged --force --key-file="$state/munge/munge.key" --socket="$state/munge/munge.socket" \
    --pid-file="$state/munged.pid" --log-file="$state/munge/munged.log" --seed-file="$state/munge/seed"
  cat >"$conf" <<CONF
ClusterName=myriad-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
AuthInfo=socket=$state/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
StateSaveLocation=$state/spool/ctld
SlurmdSpoolDir=$state/spool/d
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
MaxArraySize=10001
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$conf
  /usr/sbin/slurmctld -f "$conf" -i
  /usr/sbin/slurmd -f "$conf"
  # Ready when the node takes jobs (at most 30 s).
  for _ in $(seq 60); do
    if sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
      echo "SLURM_CONF=$conf"
      return 0
    fi
    sleep 0.5
  done
  echo "slurm_local: the node did not come up; logs in $state" >&2
  sinfo >&2 || true
  return 1
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  *) echo "usage: scripts/slurm_local.sh start|stop" >&2; exit 2 ;;
esac
