#!/usr/bin/env bash
# compose2.sh: prints the path of Docker Compose v2 (Debian 13's
# docker-compose 2.26, a static Go binary), unpacked beside this machine's
# packages under ~/.cache/limitlab-engines the first time (engines/trixie.sh),
# never installed. Debian 12's own docker-compose is v1, end of life.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${LIMITLAB_ENGINES_CACHE:-$HOME/.cache/limitlab-engines}/compose2
bin=$dir/usr/bin/docker-compose
if [ ! -x "$bin" ]; then
  echo "compose2: fetching Debian 13's docker-compose into $dir" >&2
  "$here/trixie.sh" "$dir" docker-compose
fi
"$bin" version >/dev/null
echo "$bin"
