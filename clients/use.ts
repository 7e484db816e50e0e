// Compiles only if the generated types match how a client uses them.
import type { ProfileQuery, FollowMutationVariables, SignUpMutation } from "./generated/graphql";

export function followerNames(data: ProfileQuery): string[] {
  return data.user?.followers.edges.map((e) => `${e.node.name} since ${e.followedAt}`) ?? [];
}

export function nextCursor(data: ProfileQuery): string | null | undefined {
  return data.user?.followers.pageInfo.hasNextPage ? data.user.followers.pageInfo.endCursor : null;
}

export const follow: FollowMutationVariables = { userId: "4" };

export function token(data: SignUpMutation): string {
  return data.createUser.token;
}
