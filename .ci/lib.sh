# Helpers for .ci/run and .ci/parts/*.sh (sourced; each part also sources it so it runs alone).
#
# ci_long LABEL ESTIMATE_S COMMAND...: runs COMMAND in the foreground (a shell function keeps its
# exports), prints the estimate first, a heartbeat with the elapsed time every CI_HEARTBEAT_S
# (default 30) seconds while it runs, and the measured time at the end, so no step longer than a
# minute is silent. Estimates are what a cold run measured on the CI machine (2 cores): see
# docs/ci.md; a warm (cached) run finishes in seconds.

ci_now() { date +%s; }

ci_fmt() {  # 427 -> 7m07s
    local s=$1
    if [ "$s" -ge 60 ]; then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi
}

ci_long() {
    local label=$1 estimate=$2
    shift 2
    local start beat rc
    start=$(ci_now)
    echo "[ci] ${label}: started (estimate ~$(ci_fmt "$estimate") cold on 2 cores; less when cached)"
    (
        while sleep "${CI_HEARTBEAT_S:-30}" >/dev/null 2>&1 </dev/null; do
            # leading newline: the step's own output (pytest's dots) may be mid-line
            printf '\n[ci] %s: still running, %s elapsed of ~%s estimated\n' "$label" \
                "$(ci_fmt $(($(ci_now) - start)))" "$(ci_fmt "$estimate")"
        done
    ) &
    beat=$!
    rc=0
    "$@" || rc=$?
    kill "$beat" 2>/dev/null
    wait "$beat" 2>/dev/null || true
    echo "[ci] ${label}: $( [ "$rc" -eq 0 ] && echo done || echo "FAILED (exit $rc)") in $(ci_fmt $(($(ci_now) - start)))"
    return "$rc"
}
