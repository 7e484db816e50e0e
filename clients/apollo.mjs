// Runs Apollo Client 3, with the cache and updates of apollo/follows.mjs
// that the README shows, against the server whose /graphql URL is the
// first argument. The second is JSON: the user whose followers it pages
// (forward, and backward in a cache of its own), their names newest first,
// and a user (with a token) who follows and unfollows that user. A third,
// "persisted", sends each operation by its hash alone, as Apollo's
// persisted-query link does for a server with trusted documents, and
// checks that no request carried a document's text. Prints one line per
// check; exits 1 at the first that fails.
import assert from "node:assert/strict";
import { check } from "./check.mjs";
import { createHash } from "node:crypto";
import { ApolloClient, HttpLink, gql } from "@apollo/client/core/index.js";
import { createPersistedQueryLink } from "@apollo/client/link/persisted-queries/index.js";
import { loadDevMessages, loadErrorMessages } from "@apollo/client/dev/index.js";
import { makeCache, FOLLOWERS, FOLLOW, UNFOLLOW, updateAfterFollow, updateAfterUnfollow } from "./apollo/follows.mjs";

loadDevMessages();
loadErrorMessages();

const url = process.argv[2];
const { starId, followers, fan } = JSON.parse(process.argv[3]);

const persisted = process.argv[4] === "persisted";

let requests = 0;
const texts = []; // operations sent with their text
const http = new HttpLink({
  uri: url,
  headers: { authorization: `Bearer ${fan.token}` },
  fetch: (url, init) => {
    requests++;
    const body = JSON.parse(init.body);
    if (body.query) texts.push(body.operationName);
    return fetch(url, init);
  },
});
// The hash is the SHA-256 of the document as Apollo Client prints it,
// which is the id @apollo/generate-persisted-query-manifest writes.
const sha256 = (text) => createHash("sha256").update(text).digest("hex");
const link = persisted ? createPersistedQueryLink({ sha256 }).concat(http) : http;
const newClient = () => new ApolloClient({ link, cache: makeCache() });
const client = newClient();

const cachedIn = (client) => client.readQuery({ query: FOLLOWERS, variables: { id: starId } }).user;
const cached = () => cachedIn(client);
const names = (user) => user.followers.edges.map((e) => e.node.name);

// Paging: relayStylePagination merges each page into one list, after what
// it holds when the page came with after, before it when with before.
// Forward, from the newest follow; then, in a cache of its own, backward
// from the oldest.
async function pageThrough(client, variables, more) {
  const before = requests;
  const query = { query: FOLLOWERS, variables: { id: starId, ...variables } };
  let page = (await client.query(query)).data.user.followers;
  const watch = client.watchQuery(query);
  let pages = 1;
  while (more(page.pageInfo)) {
    page = (await watch.fetchMore({ variables: more(page.pageInfo) })).data.user.followers;
    pages++;
  }
  check(`pages ${variables.first ? "forward" : "backward"} with relayStylePagination`, () => {
    assert.deepEqual(names(cachedIn(client)), followers);
    assert.equal(new Set(names(cachedIn(client))).size, followers.length, "a duplicate");
    assert.equal(pages, Math.ceil(followers.length / 3));
    assert.equal(requests, before + pages);
  });
}
await pageThrough(client, { first: 3 }, (info) => info.hasNextPage && { after: info.endCursor });
await pageThrough(newClient(), { last: 3 }, (info) => info.hasPreviousPage && { before: info.startCursor });

// follow: the payload's edge heads the cached list, without a refetch.
const before = requests;
await client.mutate({ mutation: FOLLOW, variables: { userId: starId }, update: updateAfterFollow });
check("follow updates the cached list without a refetch", () => {
  assert.deepEqual(names(cached()), [fan.name, ...followers]);
  assert.equal(cached().followerCount, followers.length + 1);
  assert.equal(requests, before + 1, "only the mutation went to the server");
});
const cursor = cached().followers.edges[0].cursor;

// Paging on from the new edge's cursor gives the rest of the list.
const rest = await client.query({ query: FOLLOWERS, variables: { id: starId, first: 3, after: cursor }, fetchPolicy: "no-cache" });
check("the new edge's cursor is the list's own", () => {
  assert.deepEqual(rest.data.user.followers.edges.map((e) => e.node.name), followers.slice(0, 3));
});

// unfollow: the edge leaves the cached list, without a refetch.
const beforeUnfollow = requests;
await client.mutate({ mutation: UNFOLLOW, variables: { userId: starId }, update: updateAfterUnfollow });
check("unfollow updates the cached list without a refetch", () => {
  assert.deepEqual(names(cached()), followers);
  assert.equal(cached().followerCount, followers.length);
  assert.equal(requests, beforeUnfollow + 1, "only the mutation went to the server");
});

// Node ids: node(id:) of a user's id is that user; an unknown id is null.
const NODES = gql`
  query Nodes($id: ID!, $ids: [ID!]!) {
    node(id: $id) { id ... on User { name } }
    nodes(ids: $ids) { id ... on User { name } }
  }
`;
const { data, errors } = await client.query({ query: NODES, variables: { id: starId, ids: [fan.id, "999999999"] }, errorPolicy: "all" });
check("node and nodes round-trip ids", () => {
  assert.equal(errors, undefined);
  assert.equal(data.node.__typename, "User");
  assert.equal(data.node.id, starId);
  assert.equal(data.nodes[0].name, fan.name);
  assert.equal(data.nodes[1], null);
});

if (persisted) {
  check("every operation went by its hash alone", () => {
    assert.deepEqual(texts, []);
  });
}
