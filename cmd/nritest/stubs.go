package main

import (
	"context"
	"errors"
	"io"
)

func runRuntime(context.Context, []string, io.Writer, io.Writer) error { return errors.New("not yet") }
func runMatrix(context.Context, []string, io.Writer, io.Writer) error  { return errors.New("not yet") }
