#!/bin/bash
# The upstream repository of the `envbuilder bump` walk-through (docs/bump.md): a small project,
# "bumpdemo", whose main branch moves on after the commit the matrix pins, adding a dependency.
# Writes upstream.git beside this script (served over file:// with uploadpack.allowFilter, so
# envbuilder's partial clone works as against GitHub) and matrices/bump-demo.yaml pinning main's
# first commit. Run from the project root.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@example.invalid GIT_COMMITTER_NAME=demo \
       GIT_COMMITTER_EMAIL=demo@example.invalid GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
commit() {  # VERSION DEPENDENCIES MESSAGE DATE
  printf '[project]\nname = "bumpdemo"\nversion = "%s"\ndependencies = [%s]\n' "$1" "$2" > "$work/pyproject.toml"
  git -C "$work" add -A
  GIT_AUTHOR_DATE="$4" GIT_COMMITTER_DATE="$4" git -C "$work" commit -q -m "$3"
}
git init -q -b main "$work"
commit 1.0 '"idna==3.10"' "bumpdemo 1.0" "2026-01-05T12:00:00Z"
commit 1.1 '"idna==3.10", "sniffio==1.3.1"' "depend on sniffio (#2)" "2026-01-12T12:00:00Z"
commit 1.1.1 '"idna==3.10", "sniffio==1.3.1"' "release 1.1.1" "2026-01-19T12:00:00Z"
rm -rf "$here/upstream.git"
git clone -q --bare "$work" "$here/upstream.git"
git --git-dir "$here/upstream.git" config uploadpack.allowFilter true
first="$(git -C "$work" rev-list --max-parents=0 HEAD)"
sed -e "s#@URL@#file://$here/upstream.git#" -e "s#@REV@#$first#" "$here/bump-demo.yaml.in" > matrices/bump-demo.yaml
