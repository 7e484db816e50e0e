// The entities of the article's follower model, as the follows server's
// schema holds them after every migration in db/migrations/<dialect>/.
// The same classes serve SQLite, SQL Server and PostgreSQL (Npgsql); what
// differs per provider is in FollowsContext.OnModelCreating.
namespace Follows.Model;

public class User
{
    public int Id { get; set; }
    public string Name { get; set; } = "";

    // Kept by the database's triggers for every writer, this app included:
    // the number of follows of this user whose follower is active, and of
    // follows by it whose followee is active. Never written by the app
    // (see FollowsContext: generated on add and update, ignored on save).
    public int FollowerCount { get; private set; }
    public int FollowingCount { get; private set; }
    // The server re-reads its in-memory copy of this user's follow list when this moves; triggers keep it.
    public long FollowingVersion { get; private set; }

    // Set while the account is deactivated: it is left out of every list
    // and count. Deactivate through the server's API, which recounts the
    // users around the account; writing it here would leave their counts
    // as they were until `follows check-counts`.
    public DateTime? DeactivatedAt { get; set; }

    // A random stamp the database gives every new row; the server's tokens
    // carry it. Read only.
    public string SecurityStamp { get; private set; } = "";

    // The subject an OpenID Connect provider names the account by, for
    // accounts that sign in through one (migration 7); null for others.
    // Unique where set.
    public string? ExternalId { get; set; }

    // The skip navigations, through the Follow join entity.
    public List<User> Followers { get; } = [];
    public List<User> Following { get; } = [];

    // The join entity's rows, when the app wants CreatedAt or the settings.
    public List<Follow> FollowerLinks { get; } = [];
    public List<Follow> FollowingLinks { get; } = [];
}

// One row per follow: FollowerId follows FolloweeId.
public class Follow
{
    public int FollowerId { get; set; }
    public int FolloweeId { get; set; }
    // The database's clock when the row was inserted, unless the app sets it.
    public DateTime CreatedAt { get; set; }
    public bool Muted { get; set; }
    public bool NotificationsEnabled { get; set; } = true;

    public User Follower { get; set; } = null!;
    public User Followee { get; set; } = null!;
}

// BlockerId blocks BlockedId: neither can follow the other. The server
// writes these; an app that only reads or deletes users need not map
// them, but then it must not be surprised that deleting a user deletes
// its blocks (the database's TR_Users_Delete trigger).
public class Block
{
    public int BlockerId { get; set; }
    public int BlockedId { get; set; }
    public DateTime CreatedAt { get; set; }

    public User Blocker { get; set; } = null!;
    public User Blocked { get; set; } = null!;
}

// A row of the server's event outbox: Kind 1 is FOLLOWED, 2 UNFOLLOWED.
// Read-only for the app.
public class FollowEvent
{
    public long Id { get; set; }
    public short Kind { get; set; }
    public int FollowerId { get; set; }
    public int FolloweeId { get; set; }
    public DateTime At { get; set; }
}

// Where a user's last write through the server stands in the primary's
// WAL (PostgreSQL only; see FollowsContext).
// SQLite and PostgreSQL: one row, Id 1, counting renames of users.
public class UserRename
{
    public int Id { get; set; }
    public long Renames { get; set; }
}

public class ViewerWrite
{
    public int UserId { get; set; }
    public long Lsn { get; set; }
}
