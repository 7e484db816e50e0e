// Runs relay-runtime, with the artifacts relay-compiler made of
// relay/UserFollowers.js (the README's Relay snippet) in generated/relay,
// against the server whose /graphql URL is the first argument. The second
// is JSON as for apollo.mjs. It pages the followers connection forward
// through the @refetchable query, then follows, unfollows and deletes an
// account, checking that @prependEdge, @deleteEdge and @deleteRecord keep
// the store's connection right without a refetch. Prints one line per
// check; exits 1 at the first that fails.
import assert from "node:assert/strict";
import { check } from "./check.mjs";
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import {
  Environment, Network, RecordSource, Store, ConnectionHandler,
  fetchQuery, commitMutation, createOperationDescriptor, getSelector,
} from "relay-runtime";

const url = process.argv[2];
const { starId, followers, fan } = JSON.parse(process.argv[3]);

// relay-compiler writes CommonJS artifacts; this package is ESM.
writeFileSync("generated/relay/package.json", '{"type": "commonjs"}\n');
const artifact = (name) => createRequire(import.meta.url)(`./generated/relay/${name}.graphql.js`);
const paginationQuery = artifact("UserFollowersPaginationQuery");
const fragment = artifact("UserFollowers_user");

let requests = 0;
async function fetchFn(params, variables) {
  requests++;
  const resp = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${fan.token}` },
    body: JSON.stringify({ query: params.text, variables }),
  });
  return resp.json();
}
const environment = new Environment({ network: Network.create(fetchFn), store: new Store(new RecordSource()) });

// The fragment as a component would read it from the store.
function readFragment() {
  const operation = createOperationDescriptor(paginationQuery, { id: starId, count: 3 });
  environment.retain(operation);
  const ref = environment.lookup(operation.fragment).data.node;
  return environment.lookup(getSelector(fragment, ref)).data;
}
const names = (user) => user.followers.edges.map((e) => e.node.name);

// What usePaginationFragment's loadNext does: the next page through the
// refetch query, which the connection handler appends in the store.
let cursor = null;
let pages = 0;
for (;;) {
  await fetchQuery(environment, paginationQuery, { id: starId, count: 3, cursor }).toPromise();
  pages++;
  const { pageInfo } = readFragment().followers;
  if (!pageInfo.hasNextPage) break;
  cursor = pageInfo.endCursor;
}
check("pages forward through the @refetchable query (node(id:))", () => {
  assert.deepEqual(names(readFragment()), followers);
  assert.equal(requests, pages);
});

const connections = [ConnectionHandler.getConnectionID(starId, "UserFollowers_followers")];
assert.equal(readFragment().followers.__id, connections[0]);
function mutate(name, variables) {
  return new Promise((resolve, reject) =>
    commitMutation(environment, { mutation: artifact(name), variables, onCompleted: resolve, onError: reject }));
}

let before = requests;
await mutate("UserFollowersFollowMutation", { userId: starId, connections });
check("@prependEdge puts the follow at the head of the connection", () => {
  assert.deepEqual(names(readFragment()), [fan.name, ...followers]);
  assert.equal(readFragment().followerCount, followers.length + 1);
  assert.equal(requests, before + 1, "only the mutation went to the server");
});

before = requests;
await mutate("UserFollowersUnfollowMutation", { userId: starId, connections });
check("@deleteEdge takes the unfollow out of the connection", () => {
  assert.deepEqual(names(readFragment()), followers);
  assert.equal(readFragment().followerCount, followers.length);
  assert.equal(requests, before + 1, "only the mutation went to the server");
});

await mutate("UserFollowersDeleteAccountMutation", { userId: fan.id });
check("@deleteRecord removes the deleted user from the store", () => {
  assert.equal(environment.getStore().getSource().get(fan.id), null);
});
