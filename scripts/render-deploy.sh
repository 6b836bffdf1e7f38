#!/usr/bin/env bash
# Renders every kustomization of deploy/ into deploy/rendered/<variant>.yaml, for kubectl older than
# 1.21 (Debian 12's kubernetes-client is 1.20: its kustomize v2.0.3 cannot read these files), and for
# a review of what each install creates. Run it after changing deploy/; test_deploy.py fails while a
# rendered file differs from what `kubectl kustomize` builds.
#   scripts/render-deploy.sh     (needs kubectl >= 1.21)
set -euo pipefail
cd "$(dirname "$0")/.."
render() {  # kustomization dir, output name
  { echo "# Rendered from $1 by scripts/render-deploy.sh: do not edit; change $1 and run it again."
    kubectl kustomize "$1"; } >"deploy/rendered/$2.yaml.tmp"
  mv "deploy/rendered/$2.yaml.tmp" "deploy/rendered/$2.yaml"
}
render deploy default
for overlay in deploy/overlays/*/; do
  render "${overlay%/}" "$(basename "$overlay")"
done
render deploy/admission admission
render deploy/admission-taint admission-taint
ls deploy/rendered
