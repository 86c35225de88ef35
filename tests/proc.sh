# Processes found and signalled by their command line through /proc, for the tests and the
# probes. Not pgrep/pkill: procps is not part of a minimal Debian (a bare root has no
# /usr/bin/pkill), and a test that calls a missing pkill sends nothing and waits on a run
# that never ends (make fresh-check found exactly that).

# proc_pids [-P PARENT] REGEX: the pids whose command line (arguments joined by spaces)
# matches the extended REGEX, and with -P only the children of PARENT; never this shell.
proc_pids() {
    local parent="" pat d pid stat cmd args
    if [ "$1" = -P ]; then parent=$2; shift 2; fi
    pat=$1
    for d in /proc/[0-9]*; do           # builtins only: a forked helper would match itself
        pid=${d#/proc/}
        [ "$pid" = "$$" ] || [ "$pid" = "$BASHPID" ] && continue
        if [ -n "$parent" ]; then
            { read -r stat < "$d/stat"; } 2>/dev/null || continue   # (it may have ended)
            stat=${stat##*) }              # after the command name, which may hold spaces
            set -- $stat                   # state ppid ...
            [ "$2" = "$parent" ] || continue
        fi
        { mapfile -d '' -t args < "$d/cmdline"; } 2>/dev/null || continue
        cmd="${args[*]}"
        [[ $cmd =~ $pat ]] && echo "$pid"
    done
    return 0
}

# proc_signal SIGNAL [-P PARENT] REGEX: send SIGNAL to each of proc_pids' pids; status 1 when
# none matched (as pkill's).
proc_signal() {
    local sig=$1 pids; shift
    pids=$(proc_pids "$@")
    [ -n "$pids" ] || return 1
    kill -"$sig" $pids 2>/dev/null
    return 0
}
