#!/usr/bin/env bash
# Builds a stand-in for Docker Hub's python:3.11-slim from Debian's own packages, for machines that reach Debian's
# mirror and PyPI but no container registry. Debian bookworm's Python is 3.11, as in the official image; the
# Dockerfile builds on it unchanged. Needs root, podman and mmdebstrap (apt-get install podman runc mmdebstrap).
#   tests/team/base_image.sh            # imports docker.io/library/python:3.11-slim unless podman already has it
#   tests/team/base_image.sh --force    # rebuilds and re-imports it
set -euo pipefail
image=docker.io/library/python:3.11-slim
if [ "${1:-}" != "--force" ] && podman image exists "$image"; then
  exit 0
fi
# The host's CA bundle goes in as it is: where egress passes through an intercepting proxy, pip inside the build
# trusts what the host trusts.
bundle=/etc/ssl/certs/ca-certificates.crt
# minbase is Debian's required priority plus apt, the contents of debian:bookworm-slim that the official image
# starts from (useradd included).
mmdebstrap --quiet --variant=minbase \
  --include=python3,python3-venv,libpython3.11-dev,ca-certificates \
  --customize-hook="upload $bundle /etc/ssl/certs/ca-certificates.crt" \
  --customize-hook='ln -sf /usr/bin/python3 "$1/usr/local/bin/python"' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  bookworm - http://deb.debian.org/debian \
  | podman import \
      --change 'ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'ENV=LANG=C.UTF-8' \
      --change 'CMD=["python3"]' \
      - "$image" >/dev/null 2>&1
echo "$image"
