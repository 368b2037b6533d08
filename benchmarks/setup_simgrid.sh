#!/usr/bin/env bash
# Install SimGrid's Python bindings (Debian package python3-simgrid) for
# benchmarks/simgrid_phase.py, which runs under the system /usr/bin/python3.
#
# Idempotent: does nothing when `import simgrid` already works.
# Exit codes: 0 = SimGrid importable; 3 = could not be installed (the caller
# should skip the SimGrid comparison gracefully).
set -u

PY=/usr/bin/python3

have_simgrid() {
    [ -x "$PY" ] && "$PY" -c 'import simgrid' >/dev/null 2>&1
}

report_ok() {
    "$PY" -c 'import simgrid, sys; sys.stdout.write("setup_simgrid: SimGrid %s available for %s\n" % (getattr(simgrid, "simgrid_version", "?"), sys.executable))' 2>/dev/null \
        || echo "setup_simgrid: SimGrid available"
}

if have_simgrid; then
    report_ok
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup_simgrid: apt-get not found; cannot install python3-simgrid, skipping SimGrid" >&2
    exit 3
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
        SUDO="sudo -n"
    else
        echo "setup_simgrid: not root and no passwordless sudo; cannot install python3-simgrid, skipping SimGrid" >&2
        exit 3
    fi
fi

export DEBIAN_FRONTEND=noninteractive

# Refresh the package lists only if apt does not know the package yet.
if ! apt-cache show python3-simgrid >/dev/null 2>&1; then
    $SUDO apt-get update -qq || echo "setup_simgrid: apt-get update failed (continuing)" >&2
fi

if ! $SUDO apt-get install -y -qq python3-simgrid >/dev/null; then
    # Maybe the lists were stale: update once and retry.
    $SUDO apt-get update -qq || true
    if ! $SUDO apt-get install -y -qq python3-simgrid >/dev/null; then
        echo "setup_simgrid: apt-get install python3-simgrid failed; skipping SimGrid" >&2
        exit 3
    fi
fi

if have_simgrid; then
    report_ok
    exit 0
fi
echo "setup_simgrid: python3-simgrid installed but 'import simgrid' fails under $PY; skipping SimGrid" >&2
exit 3
