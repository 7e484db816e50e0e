package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"follows/db"
	"follows/graphcsv"
)

// graphSizes are the named sizes of generated graph. xlarge is large ten
// times over, the same shape (see popularityExponent).
var graphSizes = map[string]int{"small": 10_000, "large": 100_000, "xlarge": 1_000_000}

// The power law: the account of rank k is chosen with weight k^-s. With
// s = 0.74 and the out-degrees below, the most popular account of the
// large graph (referenceUsers) is followed by about 30% of users.
const (
	popularityExponent = 0.74
	referenceUsers     = 100_000
)

// exponentFor returns the power law's exponent for a graph of n users
// that has the shape of one of refN users with exponent refS. Up to refN
// it is refS, as it always was, so small and large stay the graphs they
// were. Past refN the same exponent would spread the weight over more
// accounts and the most popular one would draw a smaller share of each
// user's follows (followed by about 21% of a million users rather than
// 30%), so the exponent is raised until the sum of the weights, and with
// it the top account's share of every draw, is what it is at refN: the
// top account then has the same share of followers at every size, and
// the rest of the curve keeps the power law
// (docs/decisions/ten-times-larger.md).
func exponentFor(n, refN int, refS float64) float64 {
	if n <= refN {
		return refS
	}
	target := harmonic(refN, refS)
	lo, hi := refS, 2.0
	for range 40 {
		mid := (lo + hi) / 2
		if harmonic(n, mid) > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// harmonic is the generalised harmonic number: the sum of k^-s for k in
// 1..n, the total weight of n accounts.
func harmonic(n int, s float64) float64 {
	h := 0.0
	for k := n; k >= 1; k-- { // smallest terms first, for precision
		h += math.Pow(float64(k), -s)
	}
	return h
}

// runGen writes users.csv and follows.csv for a deterministic skewed graph:
// power-law popularity and lognormal out-degree (median 20).
func runGen(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench gen", flag.ContinueOnError)
	size := fs.String("size", "small", "small (10k users), large (100k users, about 3M follows) or xlarge (1M users, about 30M follows)")
	users := fs.Int("users", 0, "number of users, instead of -size")
	out := fs.String("out", ".", "folder for users.csv and follows.csv")
	seed := fs.Uint64("seed", 1, "seed: the same seed gives the same graph")
	if err := fs.Parse(args); err != nil {
		return err
	}
	n := *users
	if n == 0 {
		var ok bool
		if n, ok = graphSizes[*size]; !ok {
			return fmt.Errorf("gen: unknown -size %q", *size)
		}
	}
	st, err := generate(n, *seed, *out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d users, %d follows; the most followed (user %d) has %d followers (%.0f%% of users); median out-degree %d\n",
		n, st.follows, st.topID, st.topFollowers, 100*float64(st.topFollowers)/float64(n), st.medianOut)
	return nil
}

type genStats struct {
	follows, topID, topFollowers, medianOut int
}

// generate writes a graph of n users of the large graph's shape.
func generate(n int, seed uint64, dir string) (genStats, error) {
	return generateWith(n, exponentFor(n, referenceUsers, popularityExponent), seed, dir)
}

// generateWith writes a graph of n users whose popularity follows the
// power law of the given exponent.
func generateWith(n int, exponent float64, seed uint64, dir string) (genStats, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return genStats{}, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	// rank[i] is the user at popularity rank i; cum the cumulative weights.
	rank := rng.Perm(n)
	cum := make([]float64, n)
	total := 0.0
	for i := range n {
		total += math.Pow(float64(i+1), -exponent)
		cum[i] = total
	}

	users := func(yield func(db.UserRow, error) bool) {
		for id := 1; id <= n; id++ {
			if !yield(db.UserRow{ID: int64(id), Name: fmt.Sprintf("user%06d", id)}, nil) {
				return
			}
		}
	}
	if err := writeFile(filepath.Join(dir, "users.csv"), func(w io.Writer) error {
		_, err := graphcsv.WriteUsers(w, users)
		return err
	}); err != nil {
		return genStats{}, err
	}

	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	span := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Sub(start)
	followers := make([]int, n+1)
	outs := make([]int, 0, n)
	var st genStats
	follows := func(yield func(db.FollowRow, error) bool) {
		chosen := map[int]bool{}
		for follower := 1; follower <= n; follower++ {
			d := int(math.Round(math.Exp(math.Log(20) + rng.NormFloat64())))
			d = min(d, n/2, 5000)
			clear(chosen)
			for tries := 0; len(chosen) < d && tries < 20*d; tries++ {
				r := sort.SearchFloat64s(cum, rng.Float64()*total)
				followee := rank[min(r, n-1)] + 1
				if followee == follower || chosen[followee] {
					continue
				}
				chosen[followee] = true
				at := start.Add(time.Duration(rng.Int64N(int64(span))).Truncate(time.Microsecond))
				if !yield(db.FollowRow{Follower: int64(follower), Followee: int64(followee), At: at}, nil) {
					return
				}
				followers[followee]++
			}
			st.follows += len(chosen)
			outs = append(outs, len(chosen))
		}
	}
	if err := writeFile(filepath.Join(dir, "follows.csv"), func(w io.Writer) error {
		_, err := graphcsv.WriteFollows(w, follows)
		return err
	}); err != nil {
		return genStats{}, err
	}
	for id, c := range followers {
		if c > st.topFollowers {
			st.topID, st.topFollowers = id, c
		}
	}
	slices.Sort(outs)
	st.medianOut = outs[len(outs)/2]
	return st, nil
}

// writeFile makes the file at path with fn, through a large buffer.
func writeFile(path string, fn func(w io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = fn(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
