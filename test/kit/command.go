package kit

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// RunCommand runs a command of hack/ (the fleet, the demo, the fleet
// benchmark) with this process's arguments and a context that an interrupt
// or SIGTERM cancels, and exits 1, saying why, when it fails.
func RunCommand(name string, run func(ctx context.Context, args []string) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
