# shellcheck shell=bash
# The local cluster's jobs: their state and fields, submitting (remembered for cleanup), ports.
# Sourced by tests/e2e/lib.sh: functions only, nothing runs when it is sourced.

job_state() { scontrol show job -o "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2 || true; }
job_field() { scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | grep "^$2=" | cut -d= -f2- || true; }
# job_node JOB K: the K-th node of a job (rank K-1's node with one task per node): beside
# other tests a 2-node job may get any two of n1-n3.
job_node() { scontrol show hostnames "$(job_field "$1" NodeList)" | sed -n "${2}p"; }
job_ended() { case "$(job_state "$1")" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | PREEMPTED | OUT_OF_MEMORY | DEADLINE) return 0 ;; *) return 1 ;; esac; }

# submit ARGS...: sbatch --parsable, remembered for cleanup; prints the job id.
submit() {
  local id
  id=$(sbatch --parsable "$@") || fail "sbatch $* was refused"
  id=${id%%;*}
  SUBMITTED+=("$id")
  echo "$id" >>"$TEST_DIR/.submitted"  # for cleanup: this usually runs in a subshell
  echo "$id"
}

# free_port [COUNT]: the first of COUNT (default 1) consecutive TCP ports nobody listens on
# now, for a launcher's rendezvous. Below the kernel's ephemeral range, which the
# tests' own outgoing connections (torch's store clients, SLURM's RPCs) draw from: a
# port taken from that range is free when picked, but an outgoing connection could
# bind it before torchrun does (CI saw "errno 98, Address already in use"). Random, so
# that tests running side by side rarely pick the same one; picked ports are checked.
# shellcheck disable=SC2120  # COUNT is passed by the tests that source this file
free_port() {
  python3 - "${1:-1}" <<'PY'
import random, socket, sys
count = int(sys.argv[1])
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
top = min(low, 32768)  # below the ephemeral range, and below 32768, where it usually starts
if top - count <= 20000:
    sys.exit("free_port: the kernel's ephemeral ports start at %d (net.ipv4.ip_local_port_range), which leaves "
             "no %d ports between 20000 and them" % (low, count))
def free(port):
    for family, addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        try:
            s = socket.socket(family)
        except OSError:  # no IPv6 here
            continue
        with s:
            try:
                s.bind((addr, port))
            except OSError:
                return False
    return True
for _ in range(1000):
    first = random.randrange(20000, top - count)
    if all(free(p) for p in range(first, first + count)):
        print(first)
        sys.exit(0)
sys.exit("free_port: no %d free consecutive ports in 20000-%d" % (count, top))
PY
}

# array_states ARRAY: "task:state" of each task that started, and "rest:STATE" for the
# pending tasks cancelled before they started (they stay in the array's one record,
# whose ArrayTaskId is then SLURM's NO_VAL - 1).
array_states() {
  scontrol show job -o "$1" | awk '{
    t = ""; st = ""
    for (i = 1; i <= NF; i++) {
      if ($i ~ /^ArrayTaskId=/) t = substr($i, 13)
      if ($i ~ /^JobState=/) st = substr($i, 10)
    }
    print (t == "4294967294" ? "rest" : t) ":" st
  }' | sort | tr '\n' ' ' | sed 's/ $//'
}
array_gone() { [ -z "$(squeue -h -j "$1" 2>/dev/null)" ]; }
