// Command bench generates skewed follower graphs and measures the server
// on them.
//
//	go run ./bench gen -size large -out DIR    write users.csv and follows.csv
//	go run ./bench load -size large            import, serve, load, print a table
//	go run ./bench chart -in results.jsonl -out chart.svg   chart a peer-bench run's ratios
//	go run ./bench events                      follow-to-event latency, idle subscribers' memory
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bench gen|load|chart|events [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = runGen(os.Args[2:], os.Stdout)
	case "load":
		err = runLoad(os.Args[2:], os.Stdout)
	case "chart":
		err = runChart(os.Args[2:], os.Stdout)
	case "events":
		err = runEvents(os.Args[2:], os.Stdout)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
