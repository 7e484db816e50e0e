// Runs relay-runtime, with the artifacts relay-compiler made of
// relay/UserFollowers.js (the README's Relay snippet) in generated/relay,
// against the server whose /graphql URL is the first argument. The second
// is JSON as for apollo.mjs. It pages the followers connection forward and
// then, in a store of its own, backward, through the @refetchable query
// with the variables usePaginationFragment's loadNext and loadPrevious
// send; then it follows, unfollows and deletes an account, checking that
// @prependEdge, @deleteEdge and @deleteRecord keep the store's connection
// right without a refetch. Prints one line per check; exits 1 at the first
// that fails.
import assert from "node:assert/strict";
import { check } from "./check.mjs";
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import {
  Environment, Network, RecordSource, Store, ConnectionHandler,
  fetchQuery, commitMutation, createOperationDescriptor, getSelector,
  getPaginationMetadata, getPaginationVariables,
} from "relay-runtime";

const url = process.argv[2];
const { starId, followers, fan } = JSON.parse(process.argv[3]);

// relay-compiler writes CommonJS artifacts; this package is ESM.
writeFileSync("generated/relay/package.json", '{"type": "commonjs"}\n');
const artifact = (name) => createRequire(import.meta.url)(`./generated/relay/${name}.graphql.js`);
const paginationQuery = artifact("UserFollowersPaginationQuery");
const fragment = artifact("UserFollowers_user");

// "persisted" as the third argument: the artifacts were compiled with
// persistConfig, and every operation must go by its id.
const persisted = process.argv[4] === "persisted";

let requests = 0;
const texts = []; // operations sent with their text
// Relay's persisted queries: an artifact compiled with persistConfig has
// an id and no text, and its operation goes by the id as doc_id.
async function fetchFn(params, variables) {
  requests++;
  if (params.text) texts.push(params.name);
  const resp = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${fan.token}` },
    body: JSON.stringify(params.id ? { doc_id: params.id, variables } : { query: params.text, variables }),
  });
  return resp.json();
}
const newEnvironment = () => new Environment({ network: Network.create(fetchFn), store: new Store(new RecordSource()) });

// The fragment as a component would read it from the store.
function readFragment(environment) {
  const operation = createOperationDescriptor(paginationQuery, { id: starId });
  environment.retain(operation);
  const ref = environment.lookup(operation.fragment).data.node;
  return environment.lookup(getSelector(fragment, ref)).data;
}
const names = (user) => user.followers.edges.map((e) => e.node.name);

// What usePaginationFragment's loadNext and loadPrevious do: a page
// through the refetch query, with the variables they send (the other
// direction's set to null), which the connection handler splices into the
// store's connection: after its end, or before its start.
const { paginationMetadata } = getPaginationMetadata(fragment, "UserFollowers");
async function pageThrough(environment, direction) {
  const info = () => readFragment(environment).followers.pageInfo;
  let cursor = null;
  let pages = 0;
  for (;;) {
    const variables = getPaginationVariables(direction, 3, cursor, { id: starId }, {}, paginationMetadata);
    await fetchQuery(environment, paginationQuery, variables).toPromise();
    pages++;
    if (direction === "forward" ? !info().hasNextPage : !info().hasPreviousPage) return pages;
    cursor = direction === "forward" ? info().endCursor : info().startCursor;
  }
}

let before = requests;
const environment = newEnvironment();
let pages = await pageThrough(environment, "forward");
check("pages forward through the @refetchable query (node(id:))", () => {
  assert.deepEqual(names(readFragment(environment)), followers);
  assert.equal(requests, before + pages);
});

before = requests;
const fromTheEnd = newEnvironment();
pages = await pageThrough(fromTheEnd, "backward");
check("pages backward from the end, as loadPrevious does", () => {
  assert.deepEqual(names(readFragment(fromTheEnd)), followers);
  assert.equal(pages, Math.ceil(followers.length / 3));
  assert.equal(requests, before + pages);
  const { pageInfo } = readFragment(fromTheEnd).followers;
  assert.equal(pageInfo.hasPreviousPage, false);
  assert.equal(pageInfo.hasNextPage, false);
});

const connections = [ConnectionHandler.getConnectionID(starId, "UserFollowers_followers")];
assert.equal(readFragment(environment).followers.__id, connections[0]);
function mutate(name, variables) {
  return new Promise((resolve, reject) =>
    commitMutation(environment, { mutation: artifact(name), variables, onCompleted: resolve, onError: reject }));
}

before = requests;
await mutate("UserFollowersFollowMutation", { userId: starId, connections });
check("@prependEdge puts the follow at the head of the connection", () => {
  assert.deepEqual(names(readFragment(environment)), [fan.name, ...followers]);
  assert.equal(readFragment(environment).followerCount, followers.length + 1);
  assert.equal(requests, before + 1, "only the mutation went to the server");
});

before = requests;
await mutate("UserFollowersUnfollowMutation", { userId: starId, connections });
check("@deleteEdge takes the unfollow out of the connection", () => {
  assert.deepEqual(names(readFragment(environment)), followers);
  assert.equal(readFragment(environment).followerCount, followers.length);
  assert.equal(requests, before + 1, "only the mutation went to the server");
});

await mutate("UserFollowersDeleteAccountMutation", { userId: fan.id });
check("@deleteRecord removes the deleted user from the store", () => {
  assert.equal(environment.getStore().getSource().get(fan.id), null);
});

if (persisted) {
  check("every operation went by its doc_id alone", () => {
    assert.deepEqual(texts, []);
  });
}
