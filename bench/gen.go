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
)

// graphSizes are the named sizes of generated graph.
var graphSizes = map[string]int{"small": 10_000, "large": 100_000}

// popularityExponent shapes the power law: the account of rank k is
// chosen with weight k^-s. With s = 0.74 and the out-degrees below, the
// most popular account is followed by about 30% of users.
const popularityExponent = 0.74

// runGen writes users.csv and follows.csv for a deterministic skewed graph:
// power-law popularity and lognormal out-degree (median 20).
func runGen(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench gen", flag.ContinueOnError)
	size := fs.String("size", "small", "small (10k users) or large (100k users, about 3M follows)")
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

func generate(n int, seed uint64, dir string) (genStats, error) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	// rank[i] is the user at popularity rank i; cum the cumulative weights.
	rank := rng.Perm(n)
	cum := make([]float64, n)
	total := 0.0
	for i := range n {
		total += math.Pow(float64(i+1), -popularityExponent)
		cum[i] = total
	}

	uf, err := create(filepath.Join(dir, "users.csv"))
	if err != nil {
		return genStats{}, err
	}
	fmt.Fprintln(uf, "Id,Name")
	for id := 1; id <= n; id++ {
		fmt.Fprintf(uf, "%d,user%06d\n", id, id)
	}
	if err := uf.close(); err != nil {
		return genStats{}, err
	}

	ff, err := create(filepath.Join(dir, "follows.csv"))
	if err != nil {
		return genStats{}, err
	}
	fmt.Fprintln(ff, "FollowerId,FolloweeId,CreatedAt")
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	span := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Sub(start)
	followers := make([]int, n+1)
	outs := make([]int, 0, n)
	var st genStats
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
			fmt.Fprintf(ff, "%d,%d,%s\n", follower, followee, at.Format("2006-01-02 15:04:05.000000"))
			followers[followee]++
		}
		st.follows += len(chosen)
		outs = append(outs, len(chosen))
	}
	if err := ff.close(); err != nil {
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

type csvFile struct {
	*bufio.Writer
	f *os.File
}

func create(path string) (*csvFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &csvFile{bufio.NewWriterSize(f, 1<<20), f}, nil
}

func (c *csvFile) close() error {
	if err := c.Flush(); err != nil {
		c.f.Close()
		return err
	}
	return c.f.Close()
}
