// The model of the follows server's schema, as every migration in
// db/migrations/<dialect>/ leaves it, for an EF Core 11 app (10 works the
// same) that shares the database with the server. Names of tables, keys,
// constraints and indexes are exactly those the migrations create, so
// `dotnet ef migrations add` finds nothing to change. Where the providers
// differ, the branch says why. Porting the article's app onto it, step by
// step: porting.md.
using Microsoft.EntityFrameworkCore;
using Microsoft.EntityFrameworkCore.Metadata;
using Microsoft.EntityFrameworkCore.Metadata.Builders;

namespace Follows.Model;

public class FollowsContext(DbContextOptions<FollowsContext> options) : DbContext(options)
{
    public DbSet<User> Users => Set<User>();
    public DbSet<Follow> Follows => Set<Follow>();
    public DbSet<Block> Blocks => Set<Block>();
    public DbSet<FollowEvent> FollowEvents => Set<FollowEvent>();

    protected override void OnModelCreating(ModelBuilder b)
    {
        var sqlite = Database.IsSqlite();
        var sqlServer = Database.IsSqlServer();
        var npgsql = Database.IsNpgsql();

        // A CreatedAt column: the database's clock when the row was
        // inserted, unless the app sets it.
        void DatabaseClock(PropertyBuilder<DateTime> createdAt)
        {
            if (sqlite)
                // EF Core's TEXT form of a DateTime, padded to seven
                // fractional digits so that text order is time order.
                createdAt.HasColumnType("TEXT").HasDefaultValueSql("strftime('%Y-%m-%d %H:%M:%f', 'now') || '0000'");
            else if (sqlServer)
                createdAt.HasColumnType("datetime2").HasDefaultValueSql("(SYSUTCDATETIME())");
            else if (npgsql)
                createdAt.HasColumnType("timestamp with time zone").HasDefaultValueSql("clock_timestamp()");
        }

        b.Entity<User>(u =>
        {
            u.ToTable("Users", t =>
            {
                // SQL Server: INSTEAD OF DELETE (migration 6) removes the
                // user's blocks and the follows of it, then the user. SQL
                // Server refuses OUTPUT without INTO on a table with an
                // enabled trigger for the statement's action (error 334),
                // so EF Core's DELETE ... OUTPUT 1 would fail here (its
                // INSERT ... OUTPUT would not: there is no INSERT trigger).
                // HasTrigger is per table, not per action: with it, EF
                // Core writes INSERT/DELETE followed by SELECT ...
                // @@ROWCOUNT for every write to Users. SQLite and
                // PostgreSQL: BEFORE DELETE, the same job (and
                // TR_Users_SecurityStamp on SQLite).
                t.HasTrigger("TR_Users_Delete");
                // SQLite and PostgreSQL: TR_Users_Rename counts renames
                // and deactivations in UserRenames (below).
                if (!sqlServer)
                    t.HasTrigger("TR_Users_Rename");
                if (sqlite)
                {
                    t.HasTrigger("TR_Users_SecurityStamp");
                    // SQLite's RETURNING reports the row before AFTER
                    // INSERT triggers run: it would read SecurityStamp
                    // back as '' while TR_Users_SecurityStamp stores a
                    // random one. INSERT then SELECT reads the stored row.
                    t.UseSqlReturningClause(false);
                }
            });
            u.HasKey(x => x.Id).HasName("PK_Users");
            // SQL Server: nvarchar(450) (900 bytes: EF Core's own width
            // for an indexed string, under the 1,700-byte key limit of a
            // nonclustered index; nvarchar(max) cannot be a key at all),
            // with a case-insensitive collation of its own whatever the
            // database's default, so that IX_Users_Name refuses "Alice"
            // beside "alice" (migration 11; adoption alters an
            // nvarchar(max) Name to this after checking its lengths and
            // duplicates). SQLite and PostgreSQL keep TEXT/text, which an
            // index takes as it is.
            if (sqlServer)
                u.Property(x => x.Name).HasMaxLength(450).UseCollation("Latin1_General_100_CI_AS");
            // Unique without regard to case. SQL Server: the column's
            // collation above does that. SQLite: the index is on
            // "Name" COLLATE NOCASE; PostgreSQL: on lower("Name"). EF Core
            // cannot say either (an index on an expression or with its
            // own collation): the model declares the unique index by
            // name, and any migration that would rebuild it must use
            // migrationBuilder.Sql with the server's DDL. Migration 11 also
            // sets LOCK_ESCALATION = DISABLE on Users (a table option EF
            // Core does not model; a migration that rebuilds Users loses
            // it).
            u.HasIndex(x => x.Name).IsUnique().HasDatabaseName("IX_Users_Name");

            // Unique where set: a filtered index (EF Core adds the filter
            // itself on SQL Server, not on the others). Subjects differing
            // only in case are different subjects: SQL Server compares
            // them with a binary collation.
            var externalId = u.Property(x => x.ExternalId);
            if (sqlServer)
                externalId.HasMaxLength(450).UseCollation("Latin1_General_100_BIN2");
            u.HasIndex(x => x.ExternalId).IsUnique().HasDatabaseName("IX_Users_ExternalId")
                .HasFilter(sqlServer ? "[ExternalId] IS NOT NULL" : "\"ExternalId\" IS NOT NULL");

            foreach (var count in new[] { nameof(User.FollowerCount), nameof(User.FollowingCount) })
            {
                var p = u.Property<int>(count).HasDefaultValue(0).ValueGeneratedOnAddOrUpdate();
                // The triggers keep them: never sent, always read back.
                p.Metadata.SetBeforeSaveBehavior(PropertySaveBehavior.Ignore);
                p.Metadata.SetAfterSaveBehavior(PropertySaveBehavior.Ignore);
            }

            // The server re-reads a follow list it holds in memory when this moves; the triggers keep it.
            var version = u.Property(x => x.FollowingVersion).HasDefaultValue(0L).ValueGeneratedOnAddOrUpdate();
            version.Metadata.SetBeforeSaveBehavior(PropertySaveBehavior.Ignore);
            version.Metadata.SetAfterSaveBehavior(PropertySaveBehavior.Ignore);

            var stamp = u.Property(x => x.SecurityStamp).HasMaxLength(32).ValueGeneratedOnAdd();
            stamp.Metadata.SetBeforeSaveBehavior(PropertySaveBehavior.Ignore);
            stamp.Metadata.SetAfterSaveBehavior(PropertySaveBehavior.Ignore);
            if (sqlite)
                stamp.HasDefaultValue(""); // TR_Users_SecurityStamp replaces it
            else if (sqlServer)
                stamp.HasDefaultValueSql("(LOWER(REPLACE(CONVERT(nvarchar(36), NEWID()), '-', '')))");
            else if (npgsql)
                stamp.HasColumnType("varchar(32)").HasDefaultValueSql("replace(gen_random_uuid()::text, '-', '')");

            // SQL Server: the defaults' constraints are named
            // DF_Users_FollowerCount, DF_Users_FollowingCount,
            // DF_Users_FollowingVersion and DF_Users_SecurityStamp
            // (DF_Follows_Muted and DF_Follows_NotificationsEnabled on
            // Follows), but the CreatedAt defaults of Follows and Blocks
            // have the names SQL Server made up. EF Core 10's
            // UseNamedDefaultConstraints() would name every default
            // DF_<table>_<column>, which those two do not match, so the
            // model leaves the names to the database: a migration that
            // changes one of these defaults must drop it by its name with
            // migrationBuilder.Sql first.
            if (sqlite)
                u.Property(x => x.DeactivatedAt).HasColumnType("TEXT");

            // Following/Followers through the Follow join entity: adding
            // to alice.Following inserts a Follow row, exactly as adding
            // a Follow does.
            u.HasMany(x => x.Following).WithMany(x => x.Followers)
                .UsingEntity<Follow>(
                    r => r.HasOne(f => f.Followee).WithMany(x => x.FollowerLinks).HasForeignKey(f => f.FolloweeId),
                    l => l.HasOne(f => f.Follower).WithMany(x => x.FollowingLinks).HasForeignKey(f => f.FollowerId));
        });

        b.Entity<Follow>(f =>
        {
            f.ToTable("Follows", t =>
            {
                t.HasCheckConstraint("CK_Follows_NoSelfFollow",
                    npgsql ? "\"FollowerId\" <> \"FolloweeId\"" : "FollowerId <> FolloweeId");
                // SQL Server: TR_Follows_Counts is AFTER INSERT, UPDATE,
                // DELETE, so every OUTPUT-without-INTO write EF Core would
                // otherwise send to Follows is refused (error 334).
                if (sqlServer || npgsql)
                    t.HasTrigger("TR_Follows_Counts");
                else
                {
                    t.HasTrigger("TR_Follows_Insert_Counts");
                    t.HasTrigger("TR_Follows_Delete_Counts");
                    t.HasTrigger("TR_Follows_Update_Counts");
                    // Pads CreatedAt to seven fractional digits after the
                    // INSERT; RETURNING would report the unpadded text
                    // (the same instant: see db/efcore_test.go).
                    t.HasTrigger("TR_Follows_CreatedAt_Form");
                    // Migrations 9 and 10 made TR_Follows_Insert_Version,
                    // TR_Follows_Delete_Version, TR_Follows_Update_Version
                    // and their table (PK_FollowVersions); migration 13
                    // dropped them all: not in the model.
                    t.UseSqlReturningClause(false);
                }
            });
            f.HasKey(x => new { x.FollowerId, x.FolloweeId }).HasName("PK_Follows");

            // The article's cascade choice: deleting a user deletes the
            // follows of it in the database (FK_Follows_Users_FolloweeId,
            // ON DELETE CASCADE); the follows by it are NO ACTION, since
            // SQL Server refuses a second cascade path (error 1785), and
            // every dialect does the same. ClientCascade has EF Core delete
            // the follows by the user that it has loaded, before the user
            // (the article's option 2); or delete them first yourself
            // (option 3: ExecuteDelete the follows, then the user).
            f.HasOne(x => x.Followee).WithMany(x => x.FollowerLinks).HasForeignKey(x => x.FolloweeId)
                .OnDelete(DeleteBehavior.Cascade).HasConstraintName("FK_Follows_Users_FolloweeId");
            f.HasOne(x => x.Follower).WithMany(x => x.FollowingLinks).HasForeignKey(x => x.FollowerId)
                .OnDelete(DeleteBehavior.ClientCascade).HasConstraintName("FK_Follows_Users_FollowerId");

            DatabaseClock(f.Property(x => x.CreatedAt));

            // Database defaults the app need not send. HasSentinel(true):
            // EF Core leaves NotificationsEnabled out of the INSERT when it
            // holds the default, true, and sends false; without it EF
            // Core would leave out false and the row would get true.
            f.Property(x => x.Muted).HasDefaultValue(false);
            f.Property(x => x.NotificationsEnabled).HasDefaultValue(true).HasSentinel(true);

            // Keyset pages, newest first: "who follows X", "whom does X
            // follow". They also cover the two foreign keys, so EF Core
            // adds no index of its own for them.
            f.HasIndex(x => new { x.FolloweeId, x.CreatedAt, x.FollowerId }).HasDatabaseName("IX_Follows_FolloweeId_CreatedAt_FollowerId");
            f.HasIndex(x => new { x.FollowerId, x.CreatedAt, x.FolloweeId }).HasDatabaseName("IX_Follows_FollowerId_CreatedAt_FolloweeId");
        });

        b.Entity<Block>(k =>
        {
            k.ToTable("Blocks", t => t.HasCheckConstraint("CK_Blocks_NoSelfBlock",
                npgsql ? "\"BlockerId\" <> \"BlockedId\"" : "BlockerId <> BlockedId"));
            k.HasKey(x => new { x.BlockerId, x.BlockedId }).HasName("PK_Blocks");
            // As for follows: the blocks of a user cascade, the blocks by
            // it are NO ACTION in the database. TR_Users_Delete deletes
            // both before the user goes, so neither stops a delete.
            k.HasOne(x => x.Blocked).WithMany().HasForeignKey(x => x.BlockedId)
                .OnDelete(DeleteBehavior.Cascade).HasConstraintName("FK_Blocks_Users_BlockedId");
            k.HasOne(x => x.Blocker).WithMany().HasForeignKey(x => x.BlockerId)
                .OnDelete(DeleteBehavior.ClientCascade).HasConstraintName("FK_Blocks_Users_BlockerId");
            k.HasIndex(x => x.BlockedId).HasDatabaseName("IX_Blocks_BlockedId");
            DatabaseClock(k.Property(x => x.CreatedAt));
        });

        // The server's outbox of live follow events (migration 8): the
        // server writes a row in the same transaction as each follow and
        // unfollow it makes, and its subscriptions deliver from here. The
        // app only needs the table in its model so that its migrations
        // leave it alone; follows the app writes itself are not announced
        // (see README.md). No foreign keys: history outlives an account.
        b.Entity<FollowEvent>(e =>
        {
            e.ToTable("FollowEvents");
            e.HasKey(x => x.Id).HasName("PK_FollowEvents");
            e.Property(x => x.Id).ValueGeneratedOnAdd();
            // PostgreSQL: "Id" bigint GENERATED ALWAYS AS IDENTITY
            // (migration 8), where Npgsql's default is BY DEFAULT.
            if (npgsql)
                e.Property(x => x.Id).UseIdentityAlwaysColumn();
            e.HasIndex(x => x.At).HasDatabaseName("IX_FollowEvents_At");
        });

        // SQLite and PostgreSQL only (migrations 15 and 16): one row
        // counting every rename and deactivation of a user, which
        // TR_Users_Rename keeps whoever writes. The server holds the
        // names of the active users it ranks among suggestions and reads
        // them again when the count moves (SQL Server ranks suggestions
        // in SQL and has no such table). Written only by the trigger; in
        // the model so that the app's migrations leave it alone.
        if (!sqlServer)
            b.Entity<UserRename>(e =>
            {
                e.ToTable("UserRenames", t => t.HasCheckConstraint("CK_UserRenames_One",
                    "\"Id\" = 1"));
                e.HasKey(x => x.Id).HasName("PK_UserRenames");
                e.Property(x => x.Id).ValueGeneratedNever();
            });

        // PostgreSQL only (migration 12): where each user's last write
        // through the server stands in the primary's WAL, which the
        // server's instances compare with a read replica's replay
        // position so that a user reads its own writes (docs/replicas.md).
        // Written only by the server, and only when it is given replicas;
        // in the model so that the app's migrations leave it alone.
        if (npgsql)
            b.Entity<ViewerWrite>(e =>
            {
                e.ToTable("ViewerWrites");
                e.HasKey(x => x.UserId).HasName("PK_ViewerWrites");
                e.Property(x => x.UserId).ValueGeneratedNever();
            });
    }
}
