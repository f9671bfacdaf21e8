package main

import (
	"os"

	"github.com/limitlab/limitlab/internal/workload"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "workload" {
		os.Exit(workload.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
}
