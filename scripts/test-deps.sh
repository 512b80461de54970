#!/usr/bin/env bash
# Installs what the tests need and Go modules do not bring: npm test servers
# (pinned by package-lock.json files) and Debian packages for outside
# clients. Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v node >/dev/null || { echo "make test needs Node.js 20 (for the DynamoDB- and SQS-compatible test servers)"; exit 1; }
command -v moto_server >/dev/null || { echo "make test needs moto_server (its CloudWatch Logs and S3 serve the AWS tests): pip install 'moto[server]==5.2.1'"; exit 1; }
for lock in $(git ls-files '*package-lock.json'); do
  dir=$(dirname "$lock")
  if [ ! -d "$dir/node_modules" ] || [ "$lock" -nt "$dir/node_modules" ]; then
    echo "npm ci in $dir"
    npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
  fi
done
./scripts/test-postgres.sh
# moto_server (S3, CloudWatch Logs and more on one port) comes from PyPI,
# which the package managers above do not reach.
if ! command -v moto_server >/dev/null; then
  if command -v pip >/dev/null || command -v pip3 >/dev/null; then
    echo "installing moto_server"
    "$(command -v pip || command -v pip3)" install --quiet 'moto[server]==5.2.1'
  else
    echo "make test needs moto_server (the S3 tests run against it): pip install 'moto[server]==5.2.1'"; exit 1
  fi
fi
# command -> Debian package, for the outside clients tests drive.
for pair in aws:awscli chromium:chromium; do
  command -v "${pair%%:*}" >/dev/null || need_apt+=("${pair#*:}")
done
# The browser tests' screenshots show the emoji of log section headers.
[ -e /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] || need_apt+=(fonts-noto-color-emoji)
if [ ${#need_apt[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_apt[@]}"
fi
# A user with nothing of its own, that tests run jobs as (spool worker
# --run-as) to show a job cannot read the server's or anyone's keys.
job_user=spool-job-test
if ! id -u "$job_user" >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "creating user $job_user (for spool worker --run-as tests)"
  $sudo useradd --system --no-create-home --shell /usr/sbin/nologin "$job_user"
fi
