package main

import (
	"context"
	"errors"
	"io"
)

func runMatrix(context.Context, []string, io.Writer, io.Writer) error { return errors.New("not yet") }

func runClassicRuntime(context.Context, *runtimeOpts, io.Writer) error { return errors.New("not yet") }
