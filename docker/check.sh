#!/usr/bin/env bash
# Checks the Docker material without a Docker engine:
# - `docker-compose config -q` accepts docker-compose.yml and
#   elk/docker-compose.elk.yml;
# - the Go tests of ops/opscheck that parse both compose files and run
#   docker/Dockerfile's build steps outside Docker (the RUN lines as the
#   Dockerfile has them, in a copy of the build context that .dockerignore
#   leaves), then check each target image's files, user, entrypoint and
#   settings file.
# Run from anywhere; needs go and docker-compose (Debian's package).
set -euo pipefail
cd "$(dirname "$0")/.."

# The monitoring overlay (Prometheus and Grafana) on top of docker-compose.yml.
docker-compose -f docker-compose.yml -f monitoring/docker-compose.monitoring.yml config -q
echo "docker-compose config: docker-compose.yml + monitoring/docker-compose.monitoring.yml ok"

for f in docker-compose.yml elk/docker-compose.elk.yml; do
  docker-compose -f "$f" config -q
  echo "docker-compose config: $f ok"
done
go test -count=1 -run '^(TestDockerfiles|TestCompose|TestELKCompose)' ./ops/opscheck/
