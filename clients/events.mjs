// Subscribes to followEvents with the graphql-ws client (the
// graphql-transport-ws protocol) and prints each event received as one
// JSON line, until it has received the number given.
// Arguments: the websocket URL, a bearer token, the cursor to start
// after, how many events.
import { createClient } from "graphql-ws";
import WebSocket from "ws";

const [url, token, after, count] = process.argv.slice(2);
const client = createClient({
  url,
  webSocketImpl: WebSocket,
  connectionParams: { Authorization: `Bearer ${token}` },
  retryAttempts: 0,
});
const events = client.iterate({
  query: `subscription($after: String) {
    followEvents(after: $after) { cursor kind follower { name } followee { name } at }
  }`,
  variables: { after },
});
let received = 0;
try {
  for await (const result of events) {
    if (result.errors) throw new Error(JSON.stringify(result.errors));
    console.log(JSON.stringify(result.data.followEvents));
    if (++received === Number(count)) break;
  }
} finally {
  await client.dispose();
}
