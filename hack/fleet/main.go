// Command fleet runs the local fleet of the demo and the end-to-end tests
// (see package test/e2e/fleet):
//
//	fleet up      start the fleet, or what of it does not run
//	fleet down    stop every process of the fleet and remove its directory
//	fleet status  print what runs and where
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/medium/picchu/test/e2e/fleet"
	"github.com/medium/picchu/test/kit"
)

func main() {
	kit.RunCommand("fleet", run)
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	dir := fs.String("dir", fleet.DefaultDir(), "directory holding the fleet's state")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: fleet [--dir DIR] up|down|status")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("want one command: up, down or status")
	}
	switch fs.Arg(0) {
	case "up", "status":
		f, err := fleet.Up(ctx, fleet.Options{Dir: *dir, Log: os.Stderr})
		if err != nil {
			return err
		}
		fmt.Print(f.Describe())
		return nil
	case "down":
		if err := fleet.Down(ctx, *dir); err != nil {
			return err
		}
		fmt.Printf("fleet: stopped and removed %s\n", *dir)
		return nil
	default:
		fs.Usage()
		return fmt.Errorf("unknown command %q", fs.Arg(0))
	}
}
