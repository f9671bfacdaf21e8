// Command reap stops the test engines an interrupted test run left behind
// (testbed.ReapStale); make test runs it first. It touches no engine
// but those, which live under /run/ll-* with their pidfiles.
package main

import (
	"fmt"
	"os"

	"github.com/limitlab/limitlab/internal/testbed"
)

func main() {
	names, err := testbed.ReapStale()
	for _, n := range names {
		fmt.Printf("reap: stopped test engine %s, left running by an earlier test run\n", n)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "reap:", err)
		os.Exit(1)
	}
}
