// Runs graphql-http's GraphQL-over-HTTP server audit against the URL given
// as the only argument and prints one JSON line per audit. Exits 1 when
// any MUST fails.
import { auditServer } from "graphql-http";

const url = process.argv[2];
const results = await auditServer({ url, fetchFn: fetch });
let mustFailed = false;
for (const r of results) {
  const row = { id: r.id, name: r.name, status: r.status };
  if (r.status !== "ok") {
    row.reason = r.reason;
    if (r.name.startsWith("MUST")) mustFailed = true;
  }
  console.log(JSON.stringify(row));
}
process.exit(mustFailed ? 1 : 0);
