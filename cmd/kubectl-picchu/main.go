// Command kubectl-picchu is the kubectl plugin of Picchu: `kubectl picchu`
// shows the releases of apps and pauses, resumes, promotes, aborts, retries
// and rolls them back. Its commands are in package plugin.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/medium/picchu/cmd/kubectl-picchu/plugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cmd := plugin.NewRootCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	err := cmd.ExecuteContext(ctx)
	stop()
	if err != nil {
		// An API server's error may quote what the cluster holds.
		fmt.Fprintln(os.Stderr, "error:", plugin.Printable(err.Error()))
		os.Exit(1)
	}
}
