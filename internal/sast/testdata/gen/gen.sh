#!/bin/bash
# Runs inside `unshare -m`: puts the sample tree at /work/src, like the sandbox.
set -u
H=/root/scratch/sast-h
mount -t tmpfs none /work
mkdir -p /work/src
mount --bind $H/src /work/src
O=$H/out
cd /work/src
PY=(app/run.py app/broken.py "app/we ird.py" app/keys.py)
$H/bandit17 -f json -o $O/bandit.json --ignore-nosec -q -- "${PY[@]}"; echo "bandit 1.7.10 rc=$?"
bandit -f json -o $O/bandit-1.6.2.json --ignore-nosec -q -- "${PY[@]}"; echo "bandit 1.6.2 rc=$?"
N=$H/npm/node_modules/.bin
$N/eslint --no-config-lookup --no-inline-config -c $H/npm/security.config.js --no-warn-ignored -f json -o $O/eslint.json -- app/web/app.js app/web/broken.js; echo "eslint rc=$?"
node $H/npm/check.mjs --output $O/ruff.json -- "${PY[@]}"; echo "ruff rc=$?"
(cd svc && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off /root/scratch/bin/gosec -nosec -fmt json -out $O/gosec.json -quiet . ./cmd/tool ./multi; echo "gosec rc=$?")
# ast-grep and gitleaks run on a copy of the changed files in the driver;
# here the tree itself (no repository config in it).
$N/ast-grep scan -c $H/rules/sgconfig.yml --json=stream -- app/run.py "app/we ird.py" app/web/app.js svc/main.go svc/multi/multi.go > $O/ast-grep.jsonl; echo "ast-grep rc=$?"
/root/scratch/bin/gitleaks dir --no-banner --no-color --redact --report-format json --report-path $O/gitleaks.json --exit-code 0 --log-level error .; echo "gitleaks --redact rc=$?"
/root/scratch/bin/gitleaks dir --no-banner --no-color --report-format json --report-path $O/gitleaks-unredacted.json --exit-code 0 --log-level error .; echo "gitleaks rc=$?"
/root/scratch/bin/gitleaks dir --no-banner --no-color --report-format json --report-path $O/gitleaks-absolute.json --exit-code 0 --log-level error /work/src; echo "gitleaks abs rc=$?"
$N/ast-grep scan -c $H/rules/sgconfig.yml --include-metadata --json=stream -- "app/we ird.py" > $O/ast-grep-metadata.jsonl; echo "ast-grep metadata rc=$?"
