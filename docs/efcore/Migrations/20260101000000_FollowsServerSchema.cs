// The migration an EF Core app adds when it moves from the convention
// mapping (User.Followers/User.Following with no join entity, table
// UserUser(FollowersId, FollowingId)) to the model of FollowsContext.cs,
// which the follows server's schema matches. An app with the explicit
// Follow entity adds the same migration with an empty Up and Down; the
// steps around it for both: ../porting.md.
//
// How to add it: replace the model with Entities.cs and FollowsContext.cs,
// run `dotnet ef migrations add FollowsServerSchema`, and replace the Up
// and Down that EF Core scaffolds (DropTable("UserUser") and
// CreateTable("Follows"): every follow lost; the counters, Blocks and the
// rest, which the server's migrations create) with these. EF Core has no
// option to add a migration without its operations (EF6's -IgnoreChanges
// has no EF Core counterpart). Keep the
// scaffolded .Designer.cs and the model snapshot: they are the model.
//
// Then, either order:
//
//   - The server converted the database first (it found UserUser and
//     turned it into Follows, then ran its migrations: `follows migrate`
//     or its first start). The schema is already what this migration and
//     the server's later migrations make, so do not run Up: record it as
//     applied, which is what EF Core itself writes after running one:
//
//       INSERT INTO "__EFMigrationsHistory" ("MigrationId", "ProductVersion")
//       VALUES ('20260101000000_FollowsServerSchema', '11.0.0');
//
//     (SQL Server: [__EFMigrationsHistory], N'...'; the ProductVersion is
//     your EF Core version.) `dotnet ef migrations list` then shows it
//     applied, and `dotnet ef migrations add` on an unchanged model finds
//     nothing to do.
//   - The app runs it first (`dotnet ef database update`): Up below is the
//     article's in-place conversion, RenameTable and RenameColumn, so no
//     row is lost; it leaves Follows as the server's migration 1 makes
//     it. The server then finds the join-entity shape, adopts it, and its
//     migrations add the counters and FollowingVersion, Blocks, the
//     settings and the triggers that the rest of the model describes. Start the server (or run
//     `follows migrate`) before the app writes again.
using Microsoft.EntityFrameworkCore.Migrations;

namespace Follows.Model.Migrations;

public partial class FollowsServerSchema : Migration
{
    protected override void Up(MigrationBuilder migrationBuilder)
    {
        var provider = migrationBuilder.ActiveProvider;
        var sqlite = provider == "Microsoft.EntityFrameworkCore.Sqlite";
        var sqlServer = provider == "Microsoft.EntityFrameworkCore.SqlServer";

        // The convention table's keys and index, under the names EF Core
        // gave them.
        migrationBuilder.DropForeignKey(name: "FK_UserUser_Users_FollowersId", table: "UserUser");
        migrationBuilder.DropForeignKey(name: "FK_UserUser_Users_FollowingId", table: "UserUser");
        migrationBuilder.DropPrimaryKey(name: "PK_UserUser", table: "UserUser");
        migrationBuilder.DropIndex(name: "IX_UserUser_FollowingId", table: "UserUser");

        // FollowersId is the follower, FollowingId the one followed: the
        // same reading as the server's conversion, never inverted.
        migrationBuilder.RenameTable(name: "UserUser", newName: "Follows");
        migrationBuilder.RenameColumn(name: "FollowersId", table: "Follows", newName: "FollowerId");
        migrationBuilder.RenameColumn(name: "FollowingId", table: "Follows", newName: "FolloweeId");

        // Existing follows get the time of the conversion, as the server's
        // conversion gives them.
        migrationBuilder.AddColumn<DateTime>(
            name: "CreatedAt", table: "Follows", nullable: false,
            type: sqlite ? "TEXT" : sqlServer ? "datetime2" : "timestamp with time zone",
            defaultValueSql: sqlite ? "strftime('%Y-%m-%d %H:%M:%f', 'now') || '0000'"
                : sqlServer ? "(SYSUTCDATETIME())" : "clock_timestamp()");

        migrationBuilder.AddPrimaryKey(name: "PK_Follows", table: "Follows", columns: ["FollowerId", "FolloweeId"]);
        migrationBuilder.AddCheckConstraint(name: "CK_Follows_NoSelfFollow", table: "Follows",
            sql: sqlite || sqlServer ? "FollowerId <> FolloweeId" : "\"FollowerId\" <> \"FolloweeId\"");
        migrationBuilder.AddForeignKey(name: "FK_Follows_Users_FolloweeId", table: "Follows", column: "FolloweeId",
            principalTable: "Users", principalColumn: "Id", onDelete: ReferentialAction.Cascade);
        migrationBuilder.AddForeignKey(name: "FK_Follows_Users_FollowerId", table: "Follows", column: "FollowerId",
            principalTable: "Users", principalColumn: "Id", onDelete: ReferentialAction.NoAction);
        migrationBuilder.CreateIndex(name: "IX_Follows_FolloweeId_CreatedAt_FollowerId", table: "Follows",
            columns: ["FolloweeId", "CreatedAt", "FollowerId"]);
        migrationBuilder.CreateIndex(name: "IX_Follows_FollowerId_CreatedAt_FolloweeId", table: "Follows",
            columns: ["FollowerId", "CreatedAt", "FolloweeId"]);
        // SQLite: EF Core rebuilds the table for the key, check and
        // foreign keys (ALTER TABLE cannot add them), in this migration's
        // transaction, copying the rows.
    }

    protected override void Down(MigrationBuilder migrationBuilder)
    {
        // Back to the convention table; CreatedAt is lost. Only before the
        // server has migrated the database: its later migrations (counters,
        // Blocks, triggers) have no EF Core Down.
        migrationBuilder.DropIndex(name: "IX_Follows_FollowerId_CreatedAt_FolloweeId", table: "Follows");
        migrationBuilder.DropIndex(name: "IX_Follows_FolloweeId_CreatedAt_FollowerId", table: "Follows");
        migrationBuilder.DropForeignKey(name: "FK_Follows_Users_FollowerId", table: "Follows");
        migrationBuilder.DropForeignKey(name: "FK_Follows_Users_FolloweeId", table: "Follows");
        migrationBuilder.DropCheckConstraint(name: "CK_Follows_NoSelfFollow", table: "Follows");
        migrationBuilder.DropPrimaryKey(name: "PK_Follows", table: "Follows");
        migrationBuilder.DropColumn(name: "CreatedAt", table: "Follows");
        migrationBuilder.RenameColumn(name: "FolloweeId", table: "Follows", newName: "FollowingId");
        migrationBuilder.RenameColumn(name: "FollowerId", table: "Follows", newName: "FollowersId");
        migrationBuilder.RenameTable(name: "Follows", newName: "UserUser");
        migrationBuilder.AddPrimaryKey(name: "PK_UserUser", table: "UserUser", columns: ["FollowersId", "FollowingId"]);
        migrationBuilder.CreateIndex(name: "IX_UserUser_FollowingId", table: "UserUser", column: "FollowingId");
        migrationBuilder.AddForeignKey(name: "FK_UserUser_Users_FollowersId", table: "UserUser", column: "FollowersId",
            principalTable: "Users", principalColumn: "Id", onDelete: ReferentialAction.Cascade);
        migrationBuilder.AddForeignKey(name: "FK_UserUser_Users_FollowingId", table: "UserUser", column: "FollowingId",
            principalTable: "Users", principalColumn: "Id",
            onDelete: migrationBuilder.ActiveProvider == "Microsoft.EntityFrameworkCore.SqlServer"
                ? ReferentialAction.NoAction : ReferentialAction.Cascade);
    }
}
