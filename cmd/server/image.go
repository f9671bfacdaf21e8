package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/limitlab/limitlab/internal/engine"
)

// imageMain writes the workload image as an OCI archive, for a cluster's
// nodes to import (`ctr -n k8s.io images import FILE`): a Kubernetes engine
// never has a participant's node pull anything.
func imageMain(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("limitlab image", flag.ContinueOnError)
	out := fs.String("o", "", "write the OCI archive to `FILE`")
	pause := fs.Bool("pause", false, "add the test cluster's sandbox (pause) image, the same binary")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() > 0 {
		return fmt.Errorf("usage: limitlab image -o FILE [-pause]")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	refs, err := engine.WriteOCIArchive(f, self, *pause)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(*out)
		return err
	}
	for _, r := range refs {
		fmt.Println(r)
	}
	return nil
}
