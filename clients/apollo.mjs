// Runs Apollo Client 3, with the cache and updates of apollo/follows.mjs
// that the README shows, against the server whose /graphql URL is the
// first argument. The second is JSON: the user whose followers it pages,
// their names newest first, and a user (with a token) who follows and
// unfollows that user. Prints one line per check; exits 1 at the first
// that fails.
import assert from "node:assert/strict";
import { check } from "./check.mjs";
import { ApolloClient, HttpLink, gql } from "@apollo/client/core/index.js";
import { loadDevMessages, loadErrorMessages } from "@apollo/client/dev/index.js";
import { makeCache, FOLLOWERS, FOLLOW, UNFOLLOW, updateAfterFollow, updateAfterUnfollow } from "./apollo/follows.mjs";

loadDevMessages();
loadErrorMessages();

const url = process.argv[2];
const { starId, followers, fan } = JSON.parse(process.argv[3]);

let requests = 0;
const client = new ApolloClient({
  link: new HttpLink({
    uri: url,
    headers: { authorization: `Bearer ${fan.token}` },
    fetch: (...args) => {
      requests++;
      return fetch(...args);
    },
  }),
  cache: makeCache(),
});

const cached = () => client.readQuery({ query: FOLLOWERS, variables: { id: starId } }).user;
const names = (user) => user.followers.edges.map((e) => e.node.name);

// Forward paging: relayStylePagination merges each page into one list.
let page = (await client.query({ query: FOLLOWERS, variables: { id: starId } })).data.user.followers;
const watch = client.watchQuery({ query: FOLLOWERS, variables: { id: starId } });
let pages = 1;
while (page.pageInfo.hasNextPage) {
  page = (await watch.fetchMore({ variables: { after: page.pageInfo.endCursor } })).data.user.followers;
  pages++;
}
check("pages forward with relayStylePagination", () => {
  assert.deepEqual(names(cached()), followers);
  assert.equal(new Set(names(cached())).size, followers.length, "a duplicate");
  assert.equal(requests, pages);
});

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
const rest = await client.query({ query: FOLLOWERS, variables: { id: starId, after: cursor }, fetchPolicy: "no-cache" });
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
