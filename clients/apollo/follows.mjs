// Apollo Client 3 and follows: a cache that pages lists the Relay way, and
// mutations whose payloads update cached lists without a refetch.
// (In a React app, import the same names from "@apollo/client".)
import { InMemoryCache, gql } from "@apollo/client/core/index.js";
import { relayStylePagination } from "@apollo/client/utilities/index.js";

export function makeCache() {
  return new InMemoryCache({
    typePolicies: {
      Query: { fields: { users: relayStylePagination() } },
      User: {
        fields: {
          followers: relayStylePagination(),
          following: relayStylePagination(),
          mutualFollows: relayStylePagination(),
        },
      },
    },
  });
}

// Pages either way: { first, after } goes forward from the newest follow,
// { last, before } backward from the oldest, and relayStylePagination
// puts each page after or before what the cache holds.
export const FOLLOWERS = gql`
  query Followers($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
    user(id: $id) {
      id
      followerCount
      followers(first: $first, after: $after, last: $last, before: $before) {
        edges { cursor followedAt node { id name } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }
  }
`;

export const FOLLOW = gql`
  mutation Follow($userId: ID!) {
    follow(input: { userId: $userId }) {
      follower { id followingCount }
      followee { id followerCount }
      followerEdge { cursor followedAt node { id name } }
      followingEdge { cursor followedAt node { id name } }
    }
  }
`;

export const UNFOLLOW = gql`
  mutation Unfollow($userId: ID!) {
    unfollow(input: { userId: $userId }) {
      follower { id followingCount }
      followee { id followerCount }
      followerId
      followeeId
    }
  }
`;

// The new follow heads the followee's followers and the follower's
// following, wherever they are cached; a follow already there moves.
export function updateAfterFollow(cache, { data }) {
  const { follower, followee, followerEdge, followingEdge } = data.follow;
  prependEdge(cache, followee, "followers", followerEdge);
  prependEdge(cache, follower, "following", followingEdge);
}

// The unfollowed edges leave both lists.
export function updateAfterUnfollow(cache, { data }) {
  const { follower, followee, followerId, followeeId } = data.unfollow;
  removeEdge(cache, followee, "followers", followerId);
  removeEdge(cache, follower, "following", followeeId);
}

function prependEdge(cache, user, field, edge) {
  cache.modify({
    id: cache.identify(user),
    fields: {
      [field](existing, { readField, toReference }) {
        const node = toReference(edge.node);
        const others = existing.edges.filter((e) => readField("id", e.node) !== edge.node.id);
        return { ...existing, edges: [{ ...edge, node }, ...others] };
      },
    },
  });
}

function removeEdge(cache, user, field, nodeId) {
  cache.modify({
    id: cache.identify(user),
    fields: {
      [field](existing, { readField }) {
        return { ...existing, edges: existing.edges.filter((e) => readField("id", e.node) !== nodeId) };
      },
    },
  });
}
