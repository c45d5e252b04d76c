//go:build e2e

// Command sleeper is the only binary of the e2e suite's two hand-made OCI
// images (the pause image and the workload image). It is built static.
//
//	sleeper [workload ...]  print args and environment, then block until SIGTERM or SIGINT
//	sleeper env             print the environment and exit
//	sleeper cat FILE...     print files and exit
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "env":
			for _, e := range os.Environ() {
				fmt.Println(e)
			}
			return
		case "cat":
			for _, f := range os.Args[2:] {
				b, err := os.ReadFile(f)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				if _, err := os.Stdout.Write(b); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
			}
			return
		}
	}
	fmt.Printf("sleeper: args=%q\n", os.Args)
	for _, e := range os.Environ() {
		fmt.Println(e)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	fmt.Printf("sleeper: exiting on %v\n", <-sig)
}
