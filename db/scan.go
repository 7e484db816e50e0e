package db

import "context"

// scanRows runs a query and hands each row to scan.
func scanRows(ctx context.Context, r runner, query string, scan func(*rows) error, args ...any) error {
	rs, err := r.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		if err := scan(rs); err != nil {
			return err
		}
	}
	return rs.Err()
}
