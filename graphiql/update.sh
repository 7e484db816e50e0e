#!/usr/bin/env bash
# Refreshes the GraphiQL assets embedded in the binary from the npm
# registry. The output (assets/) is committed, so `go run .` needs no Node
# and no network. Run it from anywhere; change the versions here.
set -euo pipefail
GRAPHIQL=4.1.2 REACT=18.3.1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
npm pack --silent "graphiql@$GRAPHIQL" "react@$REACT" "react-dom@$REACT" >/dev/null
for f in *.tgz; do mkdir "${f%.tgz}" && tar xzf "$f" -C "${f%.tgz}"; done
cp "graphiql-$GRAPHIQL/package/graphiql.min.js" "graphiql-$GRAPHIQL/package/graphiql.min.css" "$here/assets/"
cp "react-$REACT/package/umd/react.production.min.js" "$here/assets/"
cp "react-dom-$REACT/package/umd/react-dom.production.min.js" "$here/assets/"
{
  echo "graphiql $GRAPHIQL, react $REACT, react-dom $REACT (MIT), from the npm registry by update.sh"
  (cd "$here/assets" && sha256sum *.js *.css)
} > "$here/assets/VERSIONS"
cat "$here/assets/VERSIONS"
