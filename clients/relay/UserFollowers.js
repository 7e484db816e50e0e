// Relay and follows: a user's followers as a refetchable fragment that
// pages both ways (usePaginationFragment's loadNext and loadPrevious), and
// mutations whose payloads update that connection in the store without a
// refetch. Spread it with @arguments(first: 10) for the newest follows or
// @arguments(last: 10) for the oldest. Pass the connection's __id as
// $connections.
import { graphql } from "react-relay";

export const userFollowers = graphql`
  fragment UserFollowers_user on User
  @refetchable(queryName: "UserFollowersPaginationQuery")
  @argumentDefinitions(
    first: { type: "Int" }
    after: { type: "String" }
    last: { type: "Int" }
    before: { type: "String" }
  ) {
    name
    followerCount
    followers(first: $first, after: $after, last: $last, before: $before)
    @connection(key: "UserFollowers_followers") {
      __id
      edges { followedAt node { id name } }
    }
  }
`;

export const follow = graphql`
  mutation UserFollowersFollowMutation($userId: ID!, $connections: [ID!]!) {
    follow(input: { userId: $userId }) {
      followee { id followerCount }
      followerEdge @prependEdge(connections: $connections) { cursor followedAt node { id name } }
    }
  }
`;

export const unfollow = graphql`
  mutation UserFollowersUnfollowMutation($userId: ID!, $connections: [ID!]!) {
    unfollow(input: { userId: $userId }) {
      followee { id followerCount }
      followerId @deleteEdge(connections: $connections)
    }
  }
`;

export const deleteAccount = graphql`
  mutation UserFollowersDeleteAccountMutation($userId: ID!) {
    deleteUser(input: { userId: $userId }) { deletedUserId @deleteRecord }
  }
`;
