// Command printschema writes graph.PrintedSchema to the file it is given;
// go generate runs it (see graph/printed.go).
package main

import (
	"fmt"
	"os"

	"follows/graph"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: printschema FILE")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], []byte(graph.PrintedSchema()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "printschema:", err)
		os.Exit(1)
	}
}
