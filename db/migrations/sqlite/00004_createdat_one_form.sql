-- CreatedAt is compared as text, so it must have one width. EF Core writes
-- "yyyy-MM-dd HH:mm:ss.FFFFFFF", trimming trailing zeros (and the point);
-- an EF Core app writing beside the server would leave shorter texts that
-- sort wrongly against cursors. This trigger pads what any writer inserts
-- to seven fractional digits, a form EF Core reads back unchanged.

-- +goose Up
UPDATE "Follows" SET "CreatedAt" =
  CASE WHEN length("CreatedAt") = 19 THEN "CreatedAt" || '.0000000'
       ELSE substr("CreatedAt" || '0000000', 1, 27) END
WHERE length("CreatedAt") <> 27;

-- +goose StatementBegin
CREATE TRIGGER "TR_Follows_CreatedAt_Form" AFTER INSERT ON "Follows"
WHEN length(NEW."CreatedAt") <> 27 BEGIN
    UPDATE "Follows" SET "CreatedAt" =
      CASE WHEN length(NEW."CreatedAt") = 19 THEN NEW."CreatedAt" || '.0000000'
           ELSE substr(NEW."CreatedAt" || '0000000', 1, 27) END
    WHERE "FollowerId" = NEW."FollowerId" AND "FolloweeId" = NEW."FolloweeId";
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER "TR_Follows_CreatedAt_Form";
