# Sourced by ci/install.sh, ci/test.sh and ci/run.sh: which Python they use.
# PYTHON when set; else the python3 of the active virtual environment; else .venv/bin/python
# when ci/install.sh made one (an externally managed system Python); else python3 (CI: pyenv's).
if [ -z "${PYTHON:-}" ]; then
  if [ -z "${VIRTUAL_ENV:-}" ] && [ -x .venv/bin/python ]; then
    PYTHON=.venv/bin/python
  else
    PYTHON=python3
  fi
fi

# True (0) when $1 is a system Python outside any virtual environment that refuses pip installs
# (an EXTERNALLY-MANAGED marker in its stdlib folder, PEP 668).
externally_managed() {
  "$1" -c 'import os, sys, sysconfig
marker = os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")
sys.exit(0 if sys.prefix == sys.base_prefix and os.path.exists(marker) else 1)'
}
