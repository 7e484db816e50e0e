package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// configDocCommand writes docs/configuration.md (go generate runs it); it
// is no subcommand a user needs, so -h does not list it.
const configDocCommand = "config-doc"

// writeConfigDoc writes the reference of every command's flags, from the
// flag sets themselves, so that it cannot say what the binary does not.
func writeConfigDoc(w io.Writer) error {
	var b strings.Builder
	b.WriteString(`# Configuration

<!-- Generated from the flag sets by ` + "`go run . config-doc > docs/configuration.md`" + ` (go generate); do not edit. -->

Each command takes only the flags listed under it, each also from the
environment: a flag wins over its variable, which wins over an older one
listed second, which wins over the default; an empty variable is unset.
A value that does not parse stops the command before it opens anything.
A command that signs no tokens still accepts -secret, -secret-file and
-token-ttl on its command line, as every command took them before, and
says that it ignores them.
`)
	for _, c := range commands {
		name := "follows " + c.name
		if c.name == "" {
			name = "follows"
		}
		fmt.Fprintf(&b, "\n## `%s`: %s\n\n| flag | environment | default | what it sets |\n| --- | --- | --- | --- |\n", name, c.does)
		fs := newFlagSet(name, io.Discard, noEnv)
		c.new().flags(fs)
		fs.VisitAll(func(f *flag.Flag) {
			kind, usage := flag.UnquoteUsage(f)
			def := "`" + f.DefValue + "`"
			if f.DefValue == "" {
				def = "none"
			}
			fmt.Fprintf(&b, "| `-%s` | `%s` | %s | %s |\n", strings.TrimSpace(f.Name+" "+kind),
				strings.Join(env.Names(f.Name), "`, `"), def, strings.ReplaceAll(usage, "|", `\|`))
		})
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// noEnv is an environment with nothing set.
func noEnv(string) string { return "" }
