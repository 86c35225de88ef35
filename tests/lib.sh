# tests/lib.sh — helpers for shell tests (tests/t_*.sh). Each check prints
# "PASS name" or "FAIL name: reason"; tests/run.sh counts them.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }

# expect_error NAME "substring of stderr" EXPECTED_EXIT command...
# The command must exit with EXPECTED_EXIT and print the substring on stderr.
expect_error() {
    local name=$1 want=$2 code=$3; shift 3
    local out rc
    out=$("$@" 2>&1 >/dev/null); rc=$?
    if [ "$rc" -ne "$code" ]; then fail "$name" "exit $rc, expected $code; stderr: $(echo "$out" | head -3)"; return; fi
    if ! grep -qF -- "$want" <<<"$out"; then fail "$name" "stderr lacks '$want'; got: $(echo "$out" | head -3)"; return; fi
    pass "$name"
}

# expect_ok NAME command...  — exit 0
expect_ok() {
    local name=$1; shift
    local out
    if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "exit $?: $(echo "$out" | tail -3)"; fi
}
