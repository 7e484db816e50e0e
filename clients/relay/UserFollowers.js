// Relay and follows: a user's followers as a refetchable, paginated
// fragment (usePaginationFragment), and mutations whose payloads update
// that connection in the store without a refetch. Pass the connection's
// __id as $connections.
import { graphql } from "react-relay";

export const userFollowers = graphql`
  fragment UserFollowers_user on User
  @refetchable(queryName: "UserFollowersPaginationQuery")
  @argumentDefinitions(count: { type: "Int", defaultValue: 10 }, cursor: { type: "String" }) {
    name
    followerCount
    followers(first: $count, after: $cursor) @connection(key: "UserFollowers_followers") {
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
