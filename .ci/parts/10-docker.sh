# A real docker engine for the `docker`-marked build tests.
# Sourced by .ci/run (as root, from the repo root, venv at .venv). Idempotent and fast on re-run:
# every step checks first (package installed, engine answering, base image present).
#
# Why each step:
# - Debian's docker.io: its /usr/bin/docker (20.10) carries BuildKit itself; a newer CLI earlier on
#   PATH may lack the buildx plugin, which the build driver detects and routes around.
# - No registry answers here, so the base image comes from Debian's archive via debootstrap and
#   `docker import`, under the name the CPU matrix asks for.
#
# Exports: ENVBUILDER_DOCKER (a docker CLI that can run BuildKit builds).

# shellcheck source=.ci/lib.sh
command -v ci_long >/dev/null 2>&1 || source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
_dk_log() { echo "[10-docker] $*"; }

_dk_install() {
    if [ -x /usr/bin/docker ] && [ -x /usr/sbin/dockerd ] && command -v debootstrap >/dev/null; then
        _dk_log "docker.io and debootstrap installed"; return 0
    fi
    _dk_apt() {
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap >/dev/null
    }
    ci_long "[10-docker] apt-get install docker.io debootstrap" 90 _dk_apt
}

_dk_start() {
    if /usr/bin/docker info >/dev/null 2>&1; then
        # An engine whose default bridge is gone cannot start containers (a dockerd started with
        # --bridge=none in this network namespace deletes docker0): restart it so it makes a new one.
        if ip link show docker0 >/dev/null 2>&1; then _dk_log "engine running"; return 0; fi
        _dk_log "engine running without its docker0 bridge: restarting it"
        pkill -x dockerd; local j
        for j in $(seq 1 30); do pgrep -x dockerd >/dev/null || break; sleep 1; done
    fi
    setsid /usr/sbin/dockerd >/var/log/dockerd.log 2>&1 < /dev/null &
    local i
    for i in $(seq 1 60); do
        /usr/bin/docker info >/dev/null 2>&1 && { _dk_log "engine ready after ${i}x0.5 s"; return 0; }
        sleep 0.5
    done
    tail -20 /var/log/dockerd.log; return 1
}

_dk_base_image() {
    local name=debian:bookworm-slim
    if /usr/bin/docker image inspect "$name" >/dev/null 2>&1; then _dk_log "$name present"; return 0; fi
    local rootfs
    rootfs="$(mktemp -d)"
    _dk_debootstrap() { debootstrap --variant=minbase bookworm "$rootfs" >/tmp/envbuilder-debootstrap.log 2>&1; }
    ci_long "[10-docker] debootstrap minbase bookworm (log: /tmp/envbuilder-debootstrap.log)" 100 _dk_debootstrap \
        || { tail -20 /tmp/envbuilder-debootstrap.log; rm -rf "$rootfs"; return 1; }
    tar -C "$rootfs" -c . | /usr/bin/docker import - "$name" >/dev/null
    rm -rf "$rootfs"
    _dk_log "imported $name"
}

_dk_install && _dk_start && _dk_base_image || _dk_log "WARNING: docker engine setup failed"
export ENVBUILDER_DOCKER=/usr/bin/docker
