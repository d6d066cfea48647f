// Command pause is the node tests' pod sandbox image's program (the
// "pause" container): it holds the pod's namespaces and does nothing
// until SIGTERM or SIGINT, then exits 0.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
