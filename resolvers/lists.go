package resolvers

import (
	"context"

	"follows/db"
	"follows/graph"
	"follows/graph/model"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vikstrous/dataloadgen"
)

// The list fields of the schema, one row each. A row says where the schema
// has the field, its page size when the query gives none (the field's
// description says it, and a test holds the two equal), the list its cursors name, the name
// of the loader that batches its pages, where gqlgen finds its price, and
// the store method that answers it: batch for many users' pages at once,
// through the request's loader, or read for one page straight from the
// store. The page resolvers, the connection builders, prefetch and
// Complexity all read these rows.
//
// Adding a list field becomes: the schema, one row, one store method.
var (
	followersList = row(&listRow[db.Page]{listField: listField{
		object: "User", field: "followers", first: 20, cursor: model.ListFollowers, loader: "followers",
		cost: func(c *graph.ComplexityRoot, p listCost) { c.User.Followers = p.connection },
	}, batch: followPages(db.Followers)})

	followingList = row(&listRow[db.Page]{listField: listField{
		object: "User", field: "following", first: 20, cursor: model.ListFollowing, loader: "following",
		cost: func(c *graph.ComplexityRoot, p listCost) { c.User.Following = p.connection },
	}, batch: followPages(db.Following)})

	mutualList = row(&listRow[db.Page]{listField: listField{
		object: "User", field: "mutualFollows", first: 20, cursor: model.ListMutual, loader: "mutual",
		cost: func(c *graph.ComplexityRoot, p listCost) { c.User.MutualFollows = p.connection },
	}, batch: (*db.Store).MutualPages})

	// Only its owner may read it, so there is no list of them to batch.
	blockedList = row(&listRow[db.Page]{listField: listField{
		object: "User", field: "blocked", first: 20, cursor: model.ListBlocked,
		cost: func(c *graph.ComplexityRoot, p listCost) { c.User.Blocked = p.connection },
	}, read: (*db.Store).BlockedPage})

	// Only its owner may read it; a call reads up to the store's budget
	// of follows (db.SuggestionBudget) whatever its first, and costs so.
	suggestionsList = row(&listRow[[]db.Suggestion]{listField: listField{
		object: "User", field: "suggestions", first: 10, loader: "suggestions", work: suggestionsWork,
		brief: []string{"user"},
		cost:  func(c *graph.ComplexityRoot, p listCost) { c.User.Suggestions = p },
	}, batch: suggestionPages})

	// A root field: there is one per operation, with nothing to batch.
	usersList = row(&listRow[db.Page]{listField: listField{
		object: "Query", field: "users", first: 20, cursor: model.ListUsers,
		cost: func(c *graph.ComplexityRoot, p listCost) { c.Query.Users = p.connection },
	}, read: (*db.Store).UsersPage})
)

// maxFirst bounds every page: no client can ask for a whole popular list.
const maxFirst = 100

// suggestionsWork is what a suggestions call costs besides its items:
// 1,000, so that four calls fit the default -max-complexity of 5,000 and
// five do not (docs/decisions/suggestion-bounds.md). It reads up to
// db.SuggestionBudget ids (50,000), where a page of 100 followers reads
// 100 rows and costs about 100; but it reads them as a few dozen index
// ranges in one statement, an id costing a fraction of a row a page
// returns, and a typical viewer's call reads about a thousand
// (docs/decisions/suggestions-budget.md), so the price stayed.
const suggestionsWork = db.SuggestionBudget / 50

// listField is what the table says of a list field, whatever its items.
type listField struct {
	object, field string     // where the schema has it: "User", "followers"
	first         int        // the page size when neither `first` nor `last` is given
	cursor        model.List // the list its cursors name; "" when it has none
	loader        string     // its loader's name in metrics; "" when it has none
	// work is what a call costs besides its items, for a list whose
	// query does more than read its page.
	work int
	// brief, for a list that can name its users from memory
	// (db.PageQuery.Brief), is the path from an item to its user.
	brief []string
	// cost sets the field's entry in gqlgen's ComplexityRoot to its price.
	cost func(c *graph.ComplexityRoot, price listCost)

	// Filled in by row.
	index     int // the row's place in listFields and in a request's loaders
	newLoader func(s *db.Store, onBatch func(string, int), opts ...dataloadgen.Option) any
	// start begins loading a page through the request's loader, for
	// prefetch; nil for a list read straight from the store.
	start func(ctx context.Context, l *loaders, q db.PageQuery)
}

// listRow is a row of the table, for a list whose pages are V. Exactly one of
// batch and read is set.
type listRow[V any] struct {
	listField
	batch func(s *db.Store, ctx context.Context, qs []db.PageQuery, along *db.Along) ([]V, error)
	read  func(s *db.Store, ctx context.Context, q db.PageQuery) (V, error)
}

// listFields are the rows, in order, for what reads them all.
var listFields []*listField

// row adds a list to the table.
func row[V any](l *listRow[V]) *listRow[V] {
	l.index = len(listFields)
	if l.batch != nil {
		l.newLoader = func(s *db.Store, onBatch func(string, int), opts ...dataloadgen.Option) any {
			fetch := func(ctx context.Context, qs []db.PageQuery) ([]V, error) {
				along, read := takeAlong(ctx)
				defer read()
				return l.batch(s, ctx, qs, along)
			}
			return dataloadgen.NewLoader(batched(l.loader, onBatch, fetch), opts...)
		}
		l.start = func(ctx context.Context, ls *loaders, q db.PageQuery) { l.pages(ls).LoadThunk(ctx, q) }
	}
	listFields = append(listFields, &l.listField)
	return l
}

// rowOf returns the row of a field, or nil when it is not a list field.
func rowOf(object, field string) *listField {
	for _, f := range listFields {
		if f.object == object && f.field == field {
			return f
		}
	}
	return nil
}

// pages is the request's loader of the list's pages.
func (l *listRow[V]) pages(ls *loaders) *dataloadgen.Loader[db.PageQuery, V] {
	return ls.pages[l.index].(*dataloadgen.Loader[db.PageQuery, V])
}

// fetch reads a page of a user's list, through the request's loader when
// the list has one.
func (l *listRow[V]) fetch(ctx context.Context, r *Resolver, q db.PageQuery) (V, error) {
	if l.batch == nil {
		return l.read(r.Store, ctx, q)
	}
	return l.pages(r.loadersFor(ctx)).Load(ctx, q)
}

// paging is a list field's paging arguments, each nil when not given.
type paging struct {
	first, last   *int
	after, before *string
}

// args checks a list field's paging arguments and returns the page of
// user's list they ask for. Given `last`, or `before` without `first`, the
// page goes backward, from the end of its range; else forward, from its
// start. The row's default size applies to whichever way is asked.
func (f *listField) args(ctx context.Context, user int64, p paging) (db.PageQuery, error) {
	q := db.PageQuery{User: user}
	if p.first != nil && p.last != nil {
		return q, badArg(ctx, "last", "give first or last, not both, as the Relay cursor connections spec advises")
	}
	q.Backward = p.last != nil || p.before != nil && p.first == nil
	name, size := "first", p.first
	if q.Backward {
		name, size = "last", p.last
	}
	n := f.first
	if size != nil {
		n = *size
	}
	if n < 0 || n > maxFirst {
		return q, badArg(ctx, name, "must be between 0 and %d, not %d", maxFirst, n)
	}
	if q.Backward {
		q.Last = n
	} else {
		q.First = n
	}
	for _, c := range []struct {
		name   string
		cursor *string
		to     *db.Cursor
	}{{"after", p.after, &q.After}, {"before", p.before, &q.Before}} {
		if c.cursor == nil {
			continue
		}
		at, err := model.DecodeCursor(f.cursor, *c.cursor)
		if err != nil {
			return q, badArg(ctx, c.name, "not a cursor of this %s list", f.cursor)
		}
		*c.to = at
	}
	return q, nil
}

// isBrief reports whether the selection f makes of the list's users,
// under every alias, asks only for what the store can tell from memory:
// their ids and names (db.PageQuery.Brief). The resolver and prefetch both
// ask it, so that their pages are the same loader key.
func (f *listField) isBrief(oc *graphql.OperationContext, field graphql.CollectedField) bool {
	if f.brief == nil {
		return false
	}
	sels, err := selectionsAt(oc, field.Selections, f.brief)
	if err != nil {
		return false
	}
	for _, sel := range sels {
		fields, err := collectFields(oc, sel, userImplementors)
		if err != nil {
			return false
		}
		for _, u := range fields {
			switch u.Name {
			case "id", "name", "__typename":
			default:
				return false
			}
		}
	}
	return true
}

// briefHere is isBrief for the field whose resolver runs with ctx.
func (f *listField) briefHere(ctx context.Context) bool {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || !graphql.HasOperationContext(ctx) {
		return false
	}
	return f.isBrief(graphql.GetOperationContext(ctx), fc.Field)
}

// price is what the field costs: 1 and its work, plus what each item asks
// for times how many items `first` asks for, so that followers { nodes {
// followers { ... } } } costs what it multiplies to. A `first` outside
// 0..100 is priced at the nearer bound and then refused by the resolver
// with BAD_USER_INPUT, which names the argument.
func (f *listField) price(child int, first *int) int {
	n := f.first
	if first != nil {
		n = min(max(*first, 0), maxFirst)
	}
	return 1 + f.work + n*child
}

// listCost is a list field's price in the shape gqlgen asks of a list
// without cursors; connection is the shape of one with them, where `last`
// is priced as `first` is (and the dearer of the two when a query gives
// both, which the resolver refuses).
type listCost func(child int, first *int) int

func (p listCost) connection(child int, first *int, _ *string, last *int, _ *string) int {
	switch {
	case last == nil:
		return p(child, first)
	case first == nil:
		return p(child, last)
	}
	return max(p(child, first), p(child, last))
}

// Complexity prices each list field as its row says, and nodes for its
// ids; every other field costs gqlgen's default, 1 plus its children.
func Complexity() graph.ComplexityRoot {
	var c graph.ComplexityRoot
	for _, f := range listFields {
		f.cost(&c, f.price)
	}
	c.Query.Nodes = nodesPrice
	return c
}

func followPages(dir db.Direction) func(*db.Store, context.Context, []db.PageQuery, *db.Along) ([]db.Page, error) {
	return func(s *db.Store, ctx context.Context, qs []db.PageQuery, along *db.Along) ([]db.Page, error) {
		return s.FollowPages(ctx, dir, qs, along)
	}
}

// suggestionPages asks the store for suggestions, which page by first
// alone.
func suggestionPages(s *db.Store, ctx context.Context, qs []db.PageQuery, along *db.Along) ([][]db.Suggestion, error) {
	sq := make([]db.SuggestionQuery, len(qs))
	for i, q := range qs {
		sq[i] = db.SuggestionQuery{User: q.User, First: q.First, Brief: q.Brief}
	}
	return s.Suggestions(ctx, sq, along)
}
