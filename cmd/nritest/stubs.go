package main

import (
	"context"
	"errors"
	"io"
)


func runClassicRuntime(context.Context, *runtimeOpts, io.Writer) error { return errors.New("not yet") }
