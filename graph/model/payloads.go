package model

import (
	"time"

	"follows/db"
)

// The payloads of the mutations that change follows. Besides the users as
// the write left them, each carries what a client cache needs to update
// its lists without refetching: the new edges of a follow, with their
// cursors, and the ids of the users whose edges an unfollow or a block
// removes. Those are worked out here, from the users, so that the
// resolvers only fill in what the store returned.

// FollowPayload is the outcome of follow and updateFollow.
type FollowPayload struct {
	Follower, Followee *db.User
	FollowedAt         time.Time
	AlreadyFollowing   bool
}

// FollowerEdge is the follow as an edge of the followee's followers.
func (p *FollowPayload) FollowerEdge() *FollowEdge {
	return p.edge(ListFollowers, p.Follower)
}

// FollowingEdge is the follow as an edge of the follower's following.
func (p *FollowPayload) FollowingEdge() *FollowEdge {
	return p.edge(ListFollowing, p.Followee)
}

func (p *FollowPayload) edge(list List, node *db.User) *FollowEdge {
	return &FollowEdge{List: list, Node: node, FollowedAt: p.FollowedAt,
		FollowerID: p.Follower.ID, FolloweeID: p.Followee.ID}
}

// UnfollowPayload is the outcome of unfollow.
type UnfollowPayload struct {
	Follower, Followee *db.User
	WasFollowing       bool
}

// FollowerID is the node of the edge that leaves the followee's followers.
func (p *UnfollowPayload) FollowerID() string { return UserID(p.Follower.ID) }

// FolloweeID is the node of the edge that leaves the follower's following.
func (p *UnfollowPayload) FolloweeID() string { return UserID(p.Followee.ID) }

// BlockPayload is the outcome of block.
type BlockPayload struct {
	Blocker, Blocked *db.User
	AlreadyBlocked   bool
	RemovedFollows   int
}

// BlockerID is the node of the edges that leave the blocked user's lists.
func (p *BlockPayload) BlockerID() string { return UserID(p.Blocker.ID) }

// BlockedID is the node of the edges that leave the blocker's lists.
func (p *BlockPayload) BlockedID() string { return UserID(p.Blocked.ID) }
