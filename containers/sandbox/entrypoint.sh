#!/bin/sh
# Container entry point: takes the per-task token out of the environment before anything
# long-lived starts, then hands over to tini (PID 1: reaps orphaned processes) running the CMD.
#
# The token reaches the server on file descriptor 3, a pipe that the server reads to the end and
# closes. Passing it in the environment instead would leave it in /proc/1/environ (tini's start-up
# environment), which every command can read since commands run as the same user.
set -eu
if [ -z "${SANDBOX_TOKEN:-}" ]; then
  echo '{"msg":"SANDBOX_TOKEN is required"}'
  exit 1
fi
token=$SANDBOX_TOKEN
unset SANDBOX_TOKEN
export SANDBOX_TOKEN_FD=3
# A here-document is a pipe in dash (Debian's /bin/sh): nothing of it is left on disk.
exec tini -- "$@" 3<<EOF_TOKEN
$token
EOF_TOKEN
