// Package flagenv is a flag.FlagSet whose flags can each also be given in
// the environment: -max-body as FOLLOWS_MAX_BODY, and, for a few flags,
// under an older variable too. The command line wins over the variable,
// which wins over the older one, which wins over the default.
package flagenv

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Env says how flags are named in the environment.
type Env struct {
	// Prefix starts every flag's variable: -max-body is Prefix+"MAX_BODY".
	Prefix string
	// Legacy holds the variables some flags were read from before every
	// flag had one of Prefix; they still work, below it in precedence.
	Legacy map[string]string
	// Same pairs flags that give one setting two ways, so that a source
	// giving one hides what weaker sources give for the other.
	Same map[string]string
}

// Names are the variables a flag is read from, strongest first.
func (e Env) Names(flagName string) []string {
	names := []string{e.Prefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))}
	if legacy, ok := e.Legacy[flagName]; ok {
		names = append(names, legacy)
	}
	return names
}

// Set is a flag.FlagSet whose Parse also reads the environment.
type Set struct {
	*flag.FlagSet
	env    Env
	getenv func(string) string
}

// New starts an empty flag set for a command, reading variables with getenv.
func New(name string, stderr io.Writer, env Env, getenv func(string) string) *Set {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return &Set{fs, env, getenv}
}

// Parse reads the command line, then gives each flag it did not set the
// value of the first of its environment variables (Env.Names) that is not
// empty. A value that does not parse is an error naming where it came
// from.
func (fs *Set) Parse(args []string) error {
	// Before parsing: -h prints the usage while it parses.
	fs.VisitAll(func(f *flag.Flag) {
		f.Usage += " (env " + strings.Join(fs.env.Names(f.Name), ", or ") + ")"
	})
	if err := fs.FlagSet.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, other := range fs.env.Same {
		if name < other && given[name] && given[other] {
			return fmt.Errorf("give -%s or -%s, not both", name, other)
		}
	}
	// One pass per precedence level, so that a stronger variable for one
	// of Same's flags wins over a weaker one for the other.
	for level := range 2 {
		if err := fs.fromEnv(level, given); err != nil {
			return err
		}
	}
	return nil
}

// fromEnv sets the flags not given yet from their variables of one
// precedence level, and marks them given.
func (fs *Set) fromEnv(level int, given map[string]bool) error {
	var set []string
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		names := fs.env.Names(f.Name)
		if err != nil || level >= len(names) || given[f.Name] || given[fs.env.Same[f.Name]] {
			return
		}
		v := fs.getenv(names[level])
		if v == "" {
			return
		}
		if serr := fs.Set(f.Name, v); serr != nil {
			err = fmt.Errorf("invalid value %q for %s (-%s): %v", v, names[level], f.Name, serr)
		}
		set = append(set, f.Name)
	})
	if err != nil {
		return err
	}
	for _, name := range set {
		if other := fs.env.Same[name]; slices.Contains(set, other) {
			return fmt.Errorf("give %s or %s, not both", fs.env.Names(name)[level], fs.env.Names(other)[level])
		}
		given[name] = true
	}
	return nil
}

// DropUnused returns args without the flags of names that fs does not
// define (and their values), saying on stderr which it dropped: for flags
// a command took before and no longer uses, so that scripts passing them
// keep working. Their variables are not read.
func (fs *Set) DropUnused(args, names []string, stderr io.Writer) []string {
	var kept []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" || !strings.HasPrefix(arg, "-") || arg == "-" {
			return append(kept, args[i:]...) // the flags end here
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		f := fs.Lookup(name)
		if f == nil && slices.Contains(names, name) {
			fmt.Fprintf(stderr, "%s: -%s is not used by this command: ignored\n", fs.Name(), name)
			if !hasValue {
				i++ // and its value
			}
			continue
		}
		kept = append(kept, arg)
		if f == nil || hasValue || i+1 == len(args) {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
			i++
			kept = append(kept, args[i]) // its value, not a flag
		}
	}
	return kept
}

// Choice is a string flag that takes one of a few values, so that another
// is refused at start wherever it was given.
type Choice struct {
	Value *string
	Of    []string
}

func (c Choice) String() string {
	if c.Value == nil { // flag.PrintDefaults calls it on a zero Choice
		return ""
	}
	return *c.Value
}

func (c Choice) Set(s string) error {
	if !slices.Contains(c.Of, s) {
		return fmt.Errorf("want %s", strings.Join(c.Of, " or "))
	}
	*c.Value = s
	return nil
}

// List is a flag that may be repeated, each value a comma-separated list
// whose items it adds to Items, blanks dropped: one rule for every flag
// that takes several values, in a variable (which holds them all) as on
// the command line. Set refuses nothing, so that no error repeats a
// value, which may be a DSN with its password.
type List struct{ Items *[]string }

func (l List) String() string {
	if l.Items == nil {
		return ""
	}
	return strings.Join(*l.Items, ",")
}

func (l List) Set(v string) error {
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*l.Items = append(*l.Items, item)
		}
	}
	return nil
}

func (l List) Get() any { return l.String() }
