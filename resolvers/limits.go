package resolvers

import "follows/graph"

// Complexity prices each list field at its `first` times what each of its
// items asks for, so that followers { nodes { followers { ... } } } costs
// what it multiplies to. A `first` outside 0..100 is priced at 100 and then
// refused by the resolver with BAD_USER_INPUT, which names the argument.
func Complexity() graph.ComplexityRoot {
	var c graph.ComplexityRoot
	page := func(child int, first *int, def int) int {
		n := def
		if first != nil {
			n = min(max(*first, 0), maxFirst)
		}
		return 1 + n*child
	}
	conn := func(child int, first *int, _ *string) int { return page(child, first, 20) }
	c.User.Followers = conn
	c.User.Following = conn
	c.User.MutualFollows = conn
	c.User.Blocked = conn
	c.User.Suggestions = func(child int, first *int) int { return page(child, first, 10) }
	c.Query.Users = conn
	return c
}
